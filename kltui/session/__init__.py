"""One run as data: the event stream (`events`), its JSON codec and recording file, the store a
stream folds into (`store`) and the views' typed access to it (`helper_view`); what a store's
evidence means is `readings/`."""
