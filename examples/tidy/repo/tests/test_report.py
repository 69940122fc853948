from tidy import format_report

RECORDS = [
    {"name": "Widget", "category": "hardware", "amount": 2.5, "qty": 4},
    {"name": "Gizmo", "category": "hardware", "amount": 1200},
    {"name": "Extended warranty plan (3 years)", "category": "services", "amount": 99.99},
    {"name": "Returned cable", "amount": -7.25},
]


def test_full_report():
    expected = "\n".join(
        [
            "Q3 Sales",
            "========",
            "[hardware]",
            "  Gizmo                         $1,200.00",
            "  Widget x4                        $10.00",
            "  subtotal                      $1,210.00",
            "[services]",
            "  Extended warranty...             $99.99",
            "[uncategorized]",
            "  Returned cable                  ($7.25)",
            "-----------------------------------------",
            "TOTAL                           $1,302.74",
            "(1 refund)",
        ]
    )
    assert format_report(RECORDS, title="Q3 Sales") == expected


def test_without_totals_custom_currency_and_width():
    expected = "\n".join(
        [
            "[hardware]",
            "  Gizmo            EUR 1,200.00",
            "  Widget x4           EUR 10.00",
            "[services]",
            "  Extende...          EUR 99.99",
            "[uncategorized]",
            "  Returne...         (EUR 7.25)",
        ]
    )
    assert format_report(RECORDS, currency="EUR ", width=10, show_totals=False) == expected


def test_empty_report():
    assert format_report([], title="Empty") == "Empty\n=====\n(no records)"
    assert format_report([]) == "(no records)"


def test_refunds_are_counted_and_pluralised():
    out = format_report([{"name": "A", "amount": -1}, {"name": "B", "amount": -2}])
    lines = out.splitlines()
    assert lines[1] == "  A                               ($1.00)"
    assert lines[3] == "  subtotal                         $-3.00"
    assert lines[-2] == "TOTAL                              $-3.00"
    assert lines[-1] == "(2 refunds)"


def test_single_item_category_has_no_subtotal():
    out = format_report([{"name": "Solo", "category": "misc", "amount": 3}])
    assert "subtotal" not in out
    assert out.splitlines()[-1] == "TOTAL                               $3.00"
