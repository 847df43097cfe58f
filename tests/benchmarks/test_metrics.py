import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.metrics import Request, common_prefix_chars, cost_units, estimate_tokens, percentile, where_found


def naive_prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


@pytest.mark.parametrize(
    "a, b, expected",
    [
        ("", "abc", 0),
        ("abc", "abc", 3),
        ("abc", "abcdef", 3),
        ("abcdef", "abc", 3),
        ("abcd", "abxy", 2),
        ("xbc", "abc", 0),
        ("團隊方案每月", "團隊方案每年", 5),
    ],
)
def test_common_prefix_chars(a, b, expected):
    assert common_prefix_chars(a, b) == expected


@given(st.text(alphabet="ab中", max_size=60), st.text(alphabet="ab中", max_size=60))
def test_common_prefix_chars_agrees_with_a_character_loop(a, b):
    assert common_prefix_chars(a, b) == naive_prefix(a, b)
    assert common_prefix_chars(a, a + b) == len(a)


def test_common_prefix_chars_is_fast_on_a_huge_prompt():
    a = "x" * 3_000_000
    assert common_prefix_chars(a, a[:-1] + "y") == 2_999_999


def test_cost_units_reads_the_shared_prefix_and_writes_the_rest():
    assert cost_units(1_000, 0) == pytest.approx(1_250)  # nothing cached: all written
    assert cost_units(1_000, 1_000) == pytest.approx(100)  # all read
    assert cost_units(1_000, 800) == pytest.approx(0.1 * 800 + 1.25 * 200)


@pytest.mark.parametrize("cached", [-1, 1_001])
def test_cost_units_refuses_an_impossible_prefix(cached):
    with pytest.raises(ValueError):
        cost_units(1_000, cached)


def test_percentile_interpolates_between_ranks():
    values = list(range(1, 101))
    assert percentile(values, 50) == pytest.approx(50.5)
    assert percentile(values, 95) == pytest.approx(95.05)
    assert percentile([4, 1, 3, 2], 50) == pytest.approx(2.5)
    assert percentile([7.0], 95) == 7.0
    assert percentile(values, 0) == 1 and percentile(values, 100) == 100


def test_percentile_of_nothing_is_an_error():
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1], 101)


def test_where_found_names_the_first_layer_in_prompt_order():
    layers = {"recent": "the Team plan is $29", "memory": "Team plan: $29/month", "system": "You are Mina."}
    assert where_found(layers, "$29") == "memory"
    assert where_found({"recent": "$29", "summary": "no"}, "$29") == "recent"
    assert where_found(layers, "May 4") == "missing"
    assert where_found({"notes": "May 4", "recent": ""}, "May 4") == "notes"


def test_a_request_joins_its_layers_in_prompt_order():
    request = Request(
        layers={"current": "[user]\nnow", "recent": "old", "system": "sys", "memory": "", "summary": "sum"},
        build_seconds=0.01,
    )
    assert request.text == "sys\n\nsum\n\nold\n\n[user]\nnow"
    assert request.chars == len(request.text)
    assert request.folded is False


def test_estimate_tokens_counts_cjk_as_a_token_each():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd" * 10) == 10
    assert estimate_tokens("團隊方案") == 4
    assert estimate_tokens("Team 方案") == 2 + 2
