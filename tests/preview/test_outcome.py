"""The reports one previewed stack writes, as `python -m preview` and the fleet both ask for them."""

from pathlib import Path

import pytest

from preview import outcome


@pytest.fixture(scope="module")
def judged(dev):
    return outcome.Outcome(dev, [], [], [])


def test_only_the_flags_given_a_path_are_written_in_a_fixed_order(judged):
    paths = {"--graph": Path("g.md"), "--audit": None, "--json": Path("r.json")}
    assert [(o.flag, o.path) for o in outcome.outputs(judged, paths)] == [
        ("--json", Path("r.json")),
        ("--graph", Path("g.md")),
    ]


@pytest.mark.parametrize(
    "name, first_line", [("g.dot", "digraph"), ("g.gv", "digraph"), ("g.md", "flowchart TD"), ("g.mmd", "flowchart TD")]
)
def test_the_graph_format_follows_the_file_ending(judged, name, first_line):
    (graph,) = outcome.outputs(judged, {"--graph": Path(name)})
    assert graph.render().startswith(first_line)


def test_a_name_that_is_no_output_flag_is_a_bug_of_the_caller(judged):
    with pytest.raises(KeyError, match="--jsn"):
        list(outcome.outputs(judged, {"--jsn": Path("r.json")}))
