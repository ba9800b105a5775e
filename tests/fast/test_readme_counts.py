"""The README's assignments table says how many exercises, checks and named misconceptions each assignment has:
the specs decide, so the table cannot drift (a staff trial found three stale counts)."""
import re

from autograder.authoring.spec import load_spec

from conftest import ROOT


def test_the_readme_table_counts_what_the_specs_hold():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = dict((m.group(1), tuple(map(int, m.groups()[1:]))) for m in re.finditer(
        r"^\| `([0-9a-z-]+)` \|.*\| (\d+) \| (\d+) \| (\d+) \|$", text, re.M))
    specs = {}
    for spec in sorted((ROOT / "solutions").glob("*/spec.toml")):
        a = load_spec(spec.parent)
        specs[a.id] = (len(a.exercises), len(a.checks), len({(c.exercise, m.id) for c in a.checks
                                                              for m in c.misconceptions}))
    assert rows == specs
    total = int(re.search(r"\((\d+) in all;", text).group(1))
    assert total == sum(n for _, _, n in specs.values())
