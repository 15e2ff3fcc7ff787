"""Stand-ins for tests, demos and offline runs, above the parts they imitate: the scripted model
(:mod:`~om_eval.testing.scripted`) reads OM's and the simple layer's prompts to answer in their formats."""
