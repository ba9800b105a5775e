"""The golden-report comparison: exact, except the last shown digit of a number in a text (float32 results differ
there between CPUs)."""
from golden_reports import differences


def test_a_golden_report_is_compared_exactly_but_for_the_last_shown_digit_of_a_number():
    golden = {"message": "tensor([6.82453, 0.0815998]) (abs diff 2.09)", "score": 3.0, "notes": ["1e-05"]}
    assert differences({**golden, "message": "tensor([6.82453, 0.0815997]) (abs diff 2.08)"}, golden) == []
    assert differences({**golden, "message": "tensor([6.82453, 0.0815996]) (abs diff 2.09)"}, golden) == [".message"]
    assert differences({**golden, "message": "tensor([6.82453, 0.08159975]) (abs diff 2.09)"}, golden) == [".message"]
    assert differences({**golden, "message": "tensor([6.82453, 0.0815998]) (rel diff 2.09)"}, golden) == [".message"]
    assert differences({**golden, "score": 3.0000001}, golden) == [".score"]
    assert differences({**golden, "notes": ["3e-05"]}, golden) == [".notes[0]"]
    assert differences({k: v for k, v in golden.items() if k != "notes"}, golden) == [".notes"]
