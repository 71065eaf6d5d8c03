"""The schedule domain, imported by both processes: tasks and their tables, schedule specs,
classic cron, next occurrences, previews and the task service's rules.

Nothing here imports the scheduler process package (``scheduler/``) or the web layers.
"""
