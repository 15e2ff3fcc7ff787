"""om-eval's version, in one place: the wheel's metadata, ``om-eval --version`` and every store's ``created_by``."""

__version__ = "0.2.0.dev0"  # a release drops .dev0 and names its CHANGELOG section
