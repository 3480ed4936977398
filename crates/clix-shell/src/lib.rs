//! clix-shell
