"""Replay reports: the JSON document (report.data), the summary table (report.table), the HTML page (report.html)."""

from kubesched.replay.report.data import KIND, SCHEMA_VERSION, ReportMeta, report_dict, to_json

__all__ = ["KIND", "SCHEMA_VERSION", "ReportMeta", "report_dict", "to_json"]
