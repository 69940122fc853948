"""Plain-text sales report formatting."""


def format_report(records, title=None, currency="$", width=20, show_totals=True):
    """Render sales records as a text report grouped by category.

    Each record is a dict with ``name``, ``amount`` and optional ``category``
    and ``qty`` keys. Negative amounts are refunds and are shown in
    parentheses. Names longer than ``width`` are truncated with "...".
    """
    lines = []
    if title:
        lines.append(title)
        lines.append("=" * len(title))
    if not records:
        lines.append("(no records)")
        return "\n".join(lines)
    groups = {}
    for rec in records:
        category = rec.get("category") or "uncategorized"
        if category not in groups:
            groups[category] = []
        groups[category].append(rec)
    grand_total = 0
    refund_count = 0
    for category in sorted(groups):
        lines.append("[" + category + "]")
        subtotal = 0
        for rec in sorted(groups[category], key=lambda r: r["name"]):
            name = rec["name"]
            if len(name) > width:
                name = name[: width - 3] + "..."
            qty = rec.get("qty", 1)
            amount = rec["amount"] * qty
            if amount < 0:
                refund_count += 1
                shown = "(" + currency + format(-amount, ",.2f") + ")"
            else:
                shown = currency + format(amount, ",.2f")
            label = name if qty == 1 else name + " x" + str(qty)
            lines.append("  " + label.ljust(width + 5) + shown.rjust(14))
            subtotal += amount
        if show_totals and len(groups[category]) > 1:
            sub = currency + format(subtotal, ",.2f")
            lines.append("  " + "subtotal".ljust(width + 5) + sub.rjust(14))
        grand_total += subtotal
    if show_totals:
        lines.append("-" * (width + 21))
        total = currency + format(grand_total, ",.2f")
        lines.append("TOTAL".ljust(width + 7) + total.rjust(14))
        if refund_count:
            noun = "refund" if refund_count == 1 else "refunds"
            lines.append("(" + str(refund_count) + " " + noun + ")")
    return "\n".join(lines)
