"""LongMemEval data: loading (file, folder or pinned hub revision), validation, subsets, synthetic datasets."""

from om_eval.data.loader import load_dataset, select
from om_eval.data.records import (
    QUESTION_TYPES,
    Dataset,
    HaystackSession,
    Question,
    QuestionEntry,
    Turn,
)
from om_eval.data.synth import generate, mini_fixture_path, write_dataset

__all__ = [
    "QUESTION_TYPES",
    "Dataset",
    "HaystackSession",
    "Question",
    "QuestionEntry",
    "Turn",
    "generate",
    "load_dataset",
    "mini_fixture_path",
    "select",
    "write_dataset",
]
