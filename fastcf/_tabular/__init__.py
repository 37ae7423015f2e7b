"""Tabular recourse: the fold of a pipeline, the column schema, the MILP, the results.

See :class:`fastcf.tabular.TabularExplainer`.
"""
