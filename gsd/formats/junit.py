"""JUnit XML, the format CI test reporters read, written with lxml from test cases.

The elements and attributes are those of the schema Jenkins' xUnit plugin reads
(https://github.com/jenkinsci/xunit-plugin, src/main/resources/org/jenkinsci/plugins/
xunit/types/model/xsd/junit-10.xsd), which GitLab's unit test reports and GitHub's
test-report actions read as well: `testsuites` > `testsuite` > `testcase`. A test case
holds at most one `failure` or `skipped` (Apache Ant's schema allows one, and Jenkins'
JUnit plugin reads only the first) and its `system-out`. tests/data/junit.xsd is the
subset gsd writes. Imported only for `--format junit` (`gsd validate`, `gsd report`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from lxml import etree

from gsd.core.visible import visible

# XML 1.0 cannot hold these characters at all, not even escaped (lxml refuses them)
NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


class Failure(NamedTuple):
    """Why a test case failed: `message` and `type` attributes, the text in full."""

    message: str
    type: str
    text: str


class Case(NamedTuple):
    """One test case: passed unless it has a failure or is skipped (with why)."""

    name: str
    classname: str
    failure: Failure | None = None
    skipped: str | None = None
    output: str = ""  # its system-out
    seconds: float | None = None  # None: not measured, no `time` attribute


class Suite(NamedTuple):
    name: str
    cases: Sequence[Case]


def document(name: str, suites: Sequence[Suite]) -> str:
    """The JUnit XML document: `testsuites` named `name`, with the counts of every suite."""
    root = _counted(None, "testsuites", name, [c for s in suites for c in s.cases])
    for suite in suites:
        element = _counted(root, "testsuite", suite.name, suite.cases)
        for case in suite.cases:
            _testcase(element, case)
    data: bytes = etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)
    return data.decode("utf-8")


def _counted(
    parent: etree._Element | None, tag: str, name: str, cases: Sequence[Case]
) -> etree._Element:
    """A `testsuites` or `testsuite` element with the counts of `cases`."""
    attrs = {
        "name": _text(name),
        "tests": str(len(cases)),
        "failures": str(sum(c.failure is not None for c in cases)),
        "errors": "0",  # gsd's own errors are one line and exit 2, never a test case
    }
    if tag == "testsuite":  # the `testsuites` element of the schema has no `skipped`
        attrs["skipped"] = str(sum(c.skipped is not None for c in cases))
    times = [c.seconds for c in cases if c.seconds is not None]
    if times:
        attrs["time"] = f"{sum(times):.1f}"
    if parent is None:
        return etree.Element(tag, attrs)
    return etree.SubElement(parent, tag, attrs)


def _testcase(parent: etree._Element, case: Case) -> None:
    attrs = {"name": _text(case.name), "classname": _text(case.classname)}
    if case.seconds is not None:
        attrs["time"] = f"{case.seconds:.1f}"
    element = etree.SubElement(parent, "testcase", attrs)
    if case.failure is not None:
        failure = etree.SubElement(
            element, "failure", message=_text(case.failure.message), type=_text(case.failure.type)
        )
        failure.text = _text(case.failure.text)
    elif case.skipped is not None:
        etree.SubElement(element, "skipped", message=_text(case.skipped))
    if case.output:
        etree.SubElement(element, "system-out").text = _text(case.output)


def _text(value: str) -> str:
    """`value` with what XML cannot hold written out as Python would (`\\x01`, `\\ufffe`):
    a plan or an agent's output may contain it; then what XML holds but a terminal or a
    CI page would obey (CR, DEL, C1, bidi overrides) shown as `cat -v` does."""
    return visible(NOT_XML.sub(lambda m: ascii(m.group())[1:-1], value), lines=True)
