//! Inputs the fuzz targets (`fuzz/`, see docs/reliability.md) found, kept as
//! tests so the bugs stay fixed on the stable toolchain.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::time::Duration;

use clix_present::{Capture, CommandOutput, Origin, PresentOptions, SpillSink, present};

/// Keeps spilled bytes in memory, numbered like the real spill folder.
#[derive(Default)]
struct Sink(Vec<Vec<u8>>);

impl SpillSink for Sink {
    fn spill(&mut self, bytes: &[u8]) -> std::io::Result<String> {
        self.0.push(bytes.to_vec());
        Ok(format!(".clix/out/cmd-{}.txt", self.0.len()))
    }
}

fn output(stdout: &[u8]) -> CommandOutput<'_> {
    CommandOutput {
        stdout,
        stderr: b"",
        exit_code: 0,
        duration: Duration::from_millis(12),
        timed_out: None,
        capture: Capture::Complete,
        pipelines: &[],
    }
}

/// Fuzz target `present`: a text output with a NUL past the binary guard's
/// first 8 KiB (the guard scans only there, as `file` and git do) reached
/// the model's text with the NUL in it, whole or in an overflow preview.
#[test]
fn a_nul_after_the_first_8_kib_never_reaches_the_text() {
    // 100 lines of 100 bytes: past 8 KiB, below the default overflow thresholds.
    let mut stdout = format!("{:<99}\n", "2024-03-01 10:00:00 INFO request handled").repeat(100).into_bytes();
    assert!(stdout.len() > 8 * 1024);
    stdout.extend_from_slice(b"tail\0end\n");

    // Overflowing, with the NUL's line in the tail of the preview.
    let small = PresentOptions { max_bytes: 1024, head_lines: 5, tail_lines: 5, ..PresentOptions::default() };
    for (opts, overflows) in [(PresentOptions::default(), false), (small, true)] {
        let mut sink = Sink::default();
        let p = present(&output(&stdout), Origin::default, &opts, &mut sink);
        assert!(!p.text.contains('\0'), "NUL in {:?}", p.text);
        assert!(p.text.contains("tail\u{FFFD}end\n"), "the NUL is shown as U+FFFD: {:?}", p.text);
        assert!(p.text.ends_with("[exit:0 | 12ms]"));
        assert_eq!(p.truncated, overflows);
        if overflows {
            // The spilled file keeps the bytes as the command printed them.
            assert_eq!(sink.0, vec![stdout.clone()]);
            let total = format!("101 lines, {:.1}KB", stdout.len() as f64 / 1024.0);
            assert!(p.text.contains(&total), "totals count the original bytes ({total}): {}", p.text);
        }
    }
}
