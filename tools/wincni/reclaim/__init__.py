"""``wincni reclaim``: the node's sweep, what CNI GC would do, by the ownership rule."""
