//! The hub's manifest loader on arbitrary text: `clix_hub::parse_manifest`,
//! the step the loader runs on each manifest file once it has read it
//! (parse by format, then check every field).
//!
//! Input: byte 0 picks the format (`json`, `toml`, `yaml`, `yml`, and one in
//! eight an unknown extension); the rest is the text (lossy UTF-8, as a
//! file read by the loader). Properties checked on every input:
//! - it never panics;
//! - a refused manifest comes with at least one problem, and each problem
//!   has a message and a fix (a person can act on it);
//! - an accepted manifest has a name, and its generated usage starts with
//!   `usage: <name>` and names every non-positional parameter as `--name`.

#![no_main]

use libfuzzer_sys::fuzz_target;

const FORMATS: &[&str] = &["json", "toml", "yaml", "yml", "json", "toml", "yaml", "txt"];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, text)) = data.split_first() else { return };
    let format = FORMATS[usize::from(pick % 8)];
    let text = String::from_utf8_lossy(text);
    match clix_hub::parse_manifest(format, &text) {
        Ok(manifest) => {
            assert!(!manifest.name.is_empty(), "{format} {text:?}: a manifest without a name was accepted");
            let usage = clix_hub::usage(&manifest);
            assert!(usage.starts_with(&format!("usage: {}", manifest.name)), "{usage:?}");
            for p in manifest.parameters.iter().filter(|p| !p.positional) {
                assert!(usage.contains(&format!("--{}", p.name)), "--{} missing from {usage:?}", p.name);
            }
        }
        Err(problems) => {
            assert!(!problems.is_empty(), "{format} {text:?}: refused without a problem");
            for p in &problems {
                assert!(!p.message.trim().is_empty() && !p.fix.trim().is_empty(), "{format} {text:?}: {p:?}");
            }
        }
    }
});
