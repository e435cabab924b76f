"""Import files of per-token logprob pairs (the kltui-rl schema, verl's and slime's dumps)."""
