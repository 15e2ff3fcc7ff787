"""JavaScript's behaviour where Mastra's output depends on it, reproduced so om-eval's output matches byte for byte.

:mod:`~om_eval.om.js.dates` reads dates as V8's ``Date`` does; :mod:`~om_eval.om.js.json` writes JSON as
``JSON.stringify`` does; :mod:`~om_eval.om.js.text` trims and splits text with JavaScript's whitespace; and
:mod:`~om_eval.om.js.tokenx` is a port of the ``tokenx`` token estimator 1.7+ counts with.
"""
