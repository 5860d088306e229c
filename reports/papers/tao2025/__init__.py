"""tao2025: the paper declared in paper.py, its prose in paper.yaml."""
