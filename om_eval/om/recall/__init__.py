"""The ``recall`` tool of retrieval mode (1.11+, as 1.31.0 behaves): what the actor reads behind its observations.

:mod:`~om_eval.om.recall.tool` holds the message store the tool reads and its modes; :mod:`~om_eval.om.recall.parts`
how a message's parts are shown and cut to the page budget; :mod:`~om_eval.om.recall.schema` the tool's definition,
argument checks and instructions; :mod:`~om_eval.om.recall.search` its ``mode="search"`` over observation groups.
"""

from om_eval.om.recall.schema import tool_definition, validation_error
from om_eval.om.recall.tool import RecallError, RecallHistory, ThreadInfo, recall, result_json

__all__ = ["RecallError", "RecallHistory", "ThreadInfo", "recall", "result_json", "tool_definition",
           "validation_error"]
