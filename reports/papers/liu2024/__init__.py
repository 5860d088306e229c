"""liu2024: the paper declared in paper.py, its prose in paper.yaml."""
