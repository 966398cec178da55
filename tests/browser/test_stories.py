"""Every story has its whole path: example -> page -> test -> exercise -> case -> result -> plot
(scripts/stories.py), or a stated reason where it has no exercise."""

from __future__ import annotations

import pytest

from scripts import results, stories

DATA = results.load()
PLOTTED = stories.plotted_benches()


@pytest.mark.parametrize("story", stories.stories())
def test_every_story_has_its_whole_path(story):
    path = stories.path_of(story, DATA, PLOTTED)
    assert not stories.missing(story, path), f"{story} lacks {stories.missing(story, path)}: {path}"


def test_the_exercise_table_names_real_stories_and_folders():
    names = set(stories.stories())
    assert set(stories.EXERCISE) <= names and set(stories.NO_EXERCISE) <= names
    assert not set(stories.EXERCISE) & set(stories.NO_EXERCISE)
    assert set(stories.EXERCISE) | set(stories.NO_EXERCISE) == names  # each story says one or the other
    folders = {p.name for p in (stories.ROOT / "exercises").iterdir() if p.is_dir() and p.name[:2].isdigit()}
    assert set(stories.EXERCISE.values()) == folders  # and every exercise practises a story


def test_a_story_without_a_step_is_reported(monkeypatch):
    monkeypatch.setitem(stories.EXERCISE, "softmax", "99_nowhere")
    path = stories.path_of("softmax", DATA, PLOTTED)
    assert stories.missing("softmax", path) == ["exercise"]
    assert stories.missing("softmax", dict(path, plot="", exercise="exercises/08_softmax")) == ["plot"]
