"""What commands run on: root filesystems, host folders a task names, and the store that keeps them."""
