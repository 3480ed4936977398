//! How clix names content by its hash: SHA-256, in lowercase hex (a
//! checkpoint's kept file, an eval's task definitions, a plan task's
//! fingerprint), so one value reads the same wherever it is written.

use sha2::{Digest, Sha256};

/// `bytes` in lowercase hex, two digits each.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The SHA-256 of `bytes`, whole, in lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The first `n` bytes of `bytes`' SHA-256 (at most 32), in hex: a short
/// name where a whole digest is more than needed.
pub fn sha256_hex_prefix(bytes: &[u8], n: usize) -> String {
    hex(&Sha256::digest(bytes)[..n.min(32)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_read_as_sha256sum_prints_them() {
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(sha256_hex_prefix(b"abc", 4), "ba7816bf");
        assert_eq!(hex(&[0, 15, 255]), "000fff");
    }
}
