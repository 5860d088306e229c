"""reports: HOW results become tables and figures (Jinja2 HTML and LaTeX, seaborn)."""
