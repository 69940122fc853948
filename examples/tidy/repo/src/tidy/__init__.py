"""tidy: plain-text sales reports."""

from tidy.report import format_report

__all__ = ["format_report"]
