"""`kltui import`: a file of trainer and rollout logprobs as a run of the one event stream."""
