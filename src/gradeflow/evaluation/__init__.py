"""Evaluating many submissions: suites, the ledger of grades, reports and SWE-bench interop."""
