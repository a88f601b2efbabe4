"""What people read: text reports, drill screens, the runbook's Markdown and HTML.

Pure renderers of records the core returns; nothing here runs, stores or decides.
"""
