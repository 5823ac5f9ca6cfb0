"""Decoding answers as Go's json.Decoder does, with its error texts."""

from __future__ import annotations

import pytest

from kubesched.extender import wire
from kubesched.extender.gojson import GoJSONError, unmarshal
from kubesched.gocompat.strconv import go_quote


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "EOF"),
        (b" \n ", "EOF"),
        (b'{"NodeNames": ["a"', "unexpected EOF"),
        (b"<html>", "invalid character '<' looking for beginning of value"),
        (b"NaN", "invalid character 'N' looking for beginning of value"),
        (b'{"a" 1}', "invalid character '1' after object key"),
        (b'{"a": 1 "b": 2}', "invalid character '\"' after object key:value pair"),
        (b'{"NodeNames": ["a" "b"]}', "invalid character '\"' after array element"),
        (b"{'a': 1}", "invalid character '\\'' looking for beginning of object key string"),
    ],
)
def test_syntax_errors(body, message):
    with pytest.raises(GoJSONError) as err:
        unmarshal(body, wire.EXTENDER_FILTER_RESULT)
    assert str(err.value) == message


FILTER, PRIOS, PREEMPT = wire.EXTENDER_FILTER_RESULT, wire.HOST_PRIORITY_LIST, wire.EXTENDER_PREEMPTION_RESULT


@pytest.mark.parametrize(
    ("body", "t", "message"),
    [
        (b'{"Error": 3}', FILTER, "number into Go struct field ExtenderFilterResult.Error of type string"),
        (b'{"NodeNames": "a"}', FILTER, "string into Go struct field ExtenderFilterResult.NodeNames of type []string"),
        (b'{"Nodes": {"items": [1]}}', FILTER, "number into Go struct field NodeList.Nodes.items of type v1.Node"),
        (b"{}", PRIOS, "object into Go value of type v1.HostPriorityList"),
        (b'[{"Score": 2.5}]', PRIOS, "number 2.5 into Go struct field HostPriority.Score of type int64"),
        (
            b'[{"Score": 9223372036854775808}]',
            PRIOS,
            "number 9223372036854775808 into Go struct field HostPriority.Score of type int64",
        ),
        (
            b'{"NodeNameToMetaVictims": {"n": {"Pods": [{"UID": true}]}}}',
            PREEMPT,
            "bool into Go struct field MetaPod.NodeNameToMetaVictims.Pods.UID of type string",
        ),
    ],
)
def test_type_errors(body, t, message):
    with pytest.raises(GoJSONError) as err:
        unmarshal(body, t)
    assert str(err.value) == "json: cannot unmarshal " + message


def test_first_type_error_wins_after_decoding_everything():
    with pytest.raises(GoJSONError, match=r"ExtenderFilterResult\.Error of type string"):
        unmarshal(b'{"Error": 1, "NodeNames": 2}', wire.EXTENDER_FILTER_RESULT)


def test_fields_fold_case_nulls_are_zero_and_trailing_bytes_are_ignored():
    got = unmarshal(b'{"host": "a", "SCORE": 4, "Other": [1]} {"x"', wire.HOST_PRIORITY_LIST.elem)  # type: ignore[arg-type]
    assert got == {"Host": "a", "Score": 4}
    assert unmarshal(b"null", wire.HOST_PRIORITY_LIST) is None
    assert wire.host_priorities([None, {"Host": "b", "Score": None}]) == [("", 0), ("b", 0)]


def test_a_later_key_overwrites_whatever_its_case():
    got = unmarshal(b'{"Error": "exact", "error": "folded"}', wire.EXTENDER_BINDING_RESULT)
    assert got == {"Error": "folded"}  # both match; like Go, the later key overwrites


def test_go_quote():
    assert go_quote('http://h/"x"\n') == '"http://h/\\"x\\"\\n"'
    assert go_quote("\x15\x03") == '"\\x15\\x03"'
