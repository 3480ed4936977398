//! Native-extension interop contracts.

pub mod fs;
