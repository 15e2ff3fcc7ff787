"""Grading answers: the judges and everything that checks them.

:mod:`~om_eval.bench.judging.judge` (the house, lenient and official judges and their verdict rules),
:mod:`~om_eval.bench.judging.official_templates` (LongMemEval's templates, loaded at run time from the pinned
upstream file), :mod:`~om_eval.bench.judging.protocols` (the judge panel's protocols),
:mod:`~om_eval.bench.judging.probes` (answers with a known verdict that measure a judge) and
:mod:`~om_eval.bench.judging.matching` (the judge-free floor: answers that hold the gold word for word).
"""
