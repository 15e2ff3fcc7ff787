"""om-eval: reproduce, sweep and explain Observational Memory scores on LongMemEval."""

__version__ = "0.1.0"
