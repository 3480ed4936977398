//! clix-config
