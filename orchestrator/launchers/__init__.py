"""Starting processes here or elsewhere behind one interface (see base.py)."""
