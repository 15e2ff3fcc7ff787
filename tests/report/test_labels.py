"""Run names in a report: what differs between the runs shown, short, unique, with the full labels in a key."""

from __future__ import annotations

from om_eval.report.labels import MAX_LABEL, display_labels, label_key, with_display_labels


def runs(*labels: str | None) -> list[dict[str, object]]:
    return [{"run_id": f"{index:02d}" + "ab" * 16, "label": label} for index, label in enumerate(labels)]


def test_words_every_run_shares_are_dropped_and_the_key_gives_the_full_labels() -> None:
    shown = runs("prompt=current memory=rag_lme memory.top_k=50", "prompt=current memory=rag_lme memory.top_k=10")
    labels = display_labels(shown)
    assert list(labels.values()) == ["memory.top_k=50", "memory.top_k=10"]
    assert label_key(shown, labels) == (
        "Run names shortened to what differs between these runs; full labels: memory.top_k=50 = prompt=current "
        "memory=rag_lme memory.top_k=50; memory.top_k=10 = prompt=current memory=rag_lme memory.top_k=10.")
    assert [r["label"] for r in with_display_labels(shown)] == ["memory.top_k=50", "memory.top_k=10"]


def test_labels_that_differ_already_are_kept_and_need_no_key() -> None:
    shown = runs("memory=om", "memory=simple_om", None)
    labels = display_labels(shown)
    assert list(labels.values()) == ["memory=om", "memory=simple_om", "02ababab"]
    assert label_key(shown, labels) == ""


def test_a_long_name_is_cut_and_two_alike_get_their_ids() -> None:
    long = "observer.message_tokens=30000 reflector.observation_tokens=40000"
    shown = runs(f"{long} seed=1", f"{long} seed=2", "memory=om", "memory=om")
    labels = list(display_labels(shown).values())
    cut = long[:MAX_LABEL - 1] + "…"
    assert len(cut) == MAX_LABEL
    # Cut alike, so told apart by their ids (which differ in the first two characters here).
    assert labels[:2] == [f"{cut} ({shown[0]['run_id'][:8]})", f"{cut} ({shown[1]['run_id'][:8]})"]
    assert labels[2:] == [f"memory=om ({shown[2]['run_id'][:8]})", f"memory=om ({shown[3]['run_id'][:8]})"]
    assert long in label_key(shown, display_labels(shown))


def test_one_run_keeps_its_label_and_whole_keeps_every_label() -> None:
    assert list(display_labels(runs("memory=om prompt=legacy")).values()) == ["memory=om prompt=legacy"]
    shown = runs("a b", "a c")
    assert list(display_labels(shown, whole=True).values()) == ["a b", "a c"]
