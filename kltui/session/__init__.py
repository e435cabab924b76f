"""One run as data: the event stream (`events`), its JSON codec and recording file, the store a
stream folds into (`store`), and what is read off a store (`diagnosis`, `compare`)."""
