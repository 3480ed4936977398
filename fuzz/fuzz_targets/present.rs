//! Layer 2 (`clix_present::present`) on arbitrary output bytes and options.
//!
//! Input layout (so that seeds can be real command outputs, see
//! `fuzz/make_seeds.py`): a 42-byte header, then the payload. Missing header
//! bytes read as zero.
//!
//! | bytes  | field |
//! |--------|-------|
//! | 0      | flags: 1 timed out, 2 capture capped, 4 dropped count known, 8 spill fails, 16 a pipeline ran (its stages made from the first stderr bytes, see [`pipeline`]), 32 the command was given `--help`, 64 options scaled by 2^32 |
//! | 1      | stdout size: low nibble n, the stdout part repeated `1 + n` times; high nibble k, `k` KiB of ordinary log lines before it (big outputs from small inputs: the overflow thresholds, the 8 KiB binary scan) |
//! | 2..4   | max_lines (u16 LE) |
//! | 4..8   | max_bytes (u32 LE) |
//! | 8..10  | head_lines (u16) |
//! | 10..12 | tail_lines (u16) |
//! | 12..16 | preview_max_bytes (u32) |
//! | 16..20 | exit code (i32) |
//! | 20..24 | duration in ms (u32) |
//! | 24..28 | time limit in ms when timed out (u32) |
//! | 28..32 | length of the stdout part of the payload (u32); the rest is stderr |
//! | 32..36 | capture cap in bytes (u32) |
//! | 36..40 | dropped bytes (u32) |
//! | 40     | origin command: index into [`COMMANDS`] (past its end: none) |
//! | 41     | origin path: index into [`PATHS`] (past its end: none) |
//!
//! Properties checked on every input:
//! - the text never contains NUL (a model API rejects it, a terminal hides it);
//! - it ends with the footer `[exit:N | duration]` of this result, one line,
//!   naming exactly the pipeline's failed stages (never one that ended 0 or
//!   by SIGPIPE, never the last);
//! - it is no longer than the hard cap the options imply ([`hard_cap`]);
//! - a stream that overflowed went to the spill sink whole, byte for byte,
//!   and `truncated` says so; `spill_path` is the first stream's path;
//! - a small text stdout is shown verbatim at the start.
//!
//! (The text is a `String`, so valid UTF-8 holds by construction.)

#![no_main]

use std::time::Duration;

use clix_present::{
    Capture, CommandOutput, Origin, PresentOptions, SpillSink, StageExit, classify, failed_stages, footer, present,
};
use libfuzzer_sys::fuzz_target;

const HEADER: usize = 42;
/// Commands an origin may name: ours, standard ones, one with a usage table entry.
const COMMANDS: &[&str] = &["cat", "grep", "see", "sed", "python3", "jq", "ls", "x"];
/// Paths an origin may name: plain, with spaces, non-ASCII, long.
const PATHS: &[&str] = &[
    "photo.png",
    "a.bin",
    "dir/with space.txt",
    "ünïcödé/файл.txt",
    "a/very/deep/path/to/some/file/in/the/workspace.log",
];
/// What the sink answers for a spill (the real one: `.clix/out/cmd-N.txt`).
const SPILL_PATH: &str = ".clix/out/cmd-12345.txt";

/// Keeps every spilled stream, or fails like a full disk.
struct Sink {
    fail: bool,
    spilled: Vec<Vec<u8>>,
}

impl SpillSink for Sink {
    fn spill(&mut self, bytes: &[u8]) -> std::io::Result<String> {
        self.spilled.push(bytes.to_vec());
        if self.fail {
            Err(std::io::Error::new(std::io::ErrorKind::StorageFull, "No space left on device"))
        } else {
            Ok(SPILL_PATH.to_string())
        }
    }
}

fn u16_at(h: &[u8; HEADER], at: usize) -> u16 {
    u16::from_le_bytes([h[at], h[at + 1]])
}

fn u32_at(h: &[u8; HEADER], at: usize) -> u32 {
    u32::from_le_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]])
}

/// The longest text `present` may return for this input: per stream, the
/// larger of a whole stream (`max_bytes` + a closing newline), a preview
/// (`preview_max_bytes`, two cut marks, the marker and spill lines) and a
/// binary message, each NUL shown as 3 bytes; plus the `[stderr]` label, a usage hint, the capture and
/// timeout lines and the footer. Fixed parts are generous (512 bytes each),
/// so only a stream shown beyond its budget breaks it.
fn hard_cap(opts: &PresentOptions, origin: &Origin, nuls: usize) -> usize {
    let names = origin.command.as_deref().map_or(0, str::len) + origin.path.as_deref().map_or(0, str::len);
    // A NUL past the binary guard's 8 KiB is shown as U+FFFD: two bytes more.
    let whole = opts.max_bytes.saturating_add(1 + 2 * nuls);
    let preview = opts.preview_max_bytes.saturating_add(512 + 3 * SPILL_PATH.len() + 2 * nuls);
    let binary = 512 + 2 * names;
    let stream = whole.max(preview).max(binary);
    stream.saturating_mul(2).saturating_add(4 * 512 + names)
}

fuzz_target!(|data: &[u8]| {
    let mut h = [0u8; HEADER];
    let n = data.len().min(HEADER);
    h[..n].copy_from_slice(&data[..n]);
    let payload = &data[n..];

    let flags = h[0];
    let scale = |v: usize| if flags & 64 != 0 { v.wrapping_shl(32) } else { v };
    let opts = PresentOptions {
        max_lines: scale(usize::from(u16_at(&h, 2))),
        max_bytes: scale(u32_at(&h, 4) as usize),
        head_lines: scale(usize::from(u16_at(&h, 8))),
        tail_lines: scale(usize::from(u16_at(&h, 10))),
        preview_max_bytes: scale(u32_at(&h, 12) as usize),
    };
    let split = (u32_at(&h, 28) as usize).min(payload.len());
    let mut stdout = filler(usize::from(h[1] >> 4) * 1024);
    stdout.extend(payload[..split].repeat(1 + usize::from(h[1] & 15)));
    let stderr = &payload[split..];
    let exit_code = u32_at(&h, 16) as i32;
    let duration = Duration::from_millis(u64::from(u32_at(&h, 20)));
    let timed_out = (flags & 1 != 0).then(|| Duration::from_millis(u64::from(u32_at(&h, 24))));
    let capture = if flags & 2 != 0 {
        let dropped = (flags & 4 != 0).then(|| u64::from(u32_at(&h, 36)));
        Capture::Capped { limit: u64::from(u32_at(&h, 32)), dropped }
    } else {
        Capture::Complete
    };
    let origin = Origin {
        command: COMMANDS.get(usize::from(h[40])).map(|s| s.to_string()),
        path: PATHS.get(usize::from(h[41])).map(|s| s.to_string()),
        asked_help: flags & 32 != 0,
    };
    let pipelines = if flags & 16 != 0 { vec![pipeline(stderr)] } else { Vec::new() };
    let out = CommandOutput { stdout: &stdout, stderr, exit_code, duration, timed_out, capture, pipelines: &pipelines };
    let mut sink = Sink { fail: flags & 8 != 0, spilled: Vec::new() };

    let p = present(&out, || origin.clone(), &opts, &mut sink);

    assert!(!p.text.contains('\0'), "NUL in the presentation: {:?}", p.text);
    let failed = failed_stages(&pipelines);
    let want_footer = footer(exit_code, &failed, duration);
    assert!(p.text.ends_with(&want_footer), "no footer {want_footer:?} at the end of {:?}", p.text);
    assert!(!want_footer.contains('\n'), "a footer of two lines: {want_footer:?}");
    let stages = pipelines.first().map_or(&[][..], |p| p.split_last().map_or(&[][..], |(_, before)| before));
    for stage in stages {
        let named = failed.contains(stage);
        assert_eq!(named, stage.exit_code != 0 && stage.exit_code != 141, "{stage:?} named: {named}");
    }
    assert!(
        failed.iter().all(|f| stages.contains(f)),
        "a failed stage that is not a stage before the last: {failed:?}"
    );
    let nuls = stdout.iter().chain(stderr).filter(|&&b| b == 0).count();
    let cap = hard_cap(&opts, &origin, nuls);
    assert!(p.text.len() <= cap, "{} bytes of text, cap {cap} for {opts:?}", p.text.len());

    // Every spilled stream is one of ours, whole; a spill means truncation.
    for spilled in &sink.spilled {
        assert!(spilled == &stdout || spilled == stderr, "the sink got bytes that are neither stream");
    }
    assert_eq!(p.truncated, !sink.spilled.is_empty(), "truncated iff something was spilled");
    let saved = !sink.fail && !sink.spilled.is_empty();
    assert_eq!(p.spill_path.is_some(), saved, "spill_path iff a spill succeeded");

    // A small text stdout is shown as it is, first.
    let fits = stdout.len() <= opts.max_bytes && lines(&stdout) <= opts.max_lines;
    if classify(&stdout).is_none() && fits && !stdout.is_empty() && !stdout.contains(&0) {
        let shown = std::str::from_utf8(&stdout).unwrap_or_default();
        assert!(p.text.starts_with(shown), "stdout not shown verbatim");
    }
});

/// Stage names a pipeline may hold: commands, and the paths (non-ASCII,
/// longer than the footer shows) as names built from a `$(…)`.
fn stage_name(b: u8) -> &'static str {
    let names = COMMANDS.len() + PATHS.len() + 1;
    match usize::from(b) % names {
        i if i < COMMANDS.len() => COMMANDS[i],
        i if i < names - 1 => PATHS[i - COMMANDS.len()],
        _ => "",
    }
}

/// One pipeline of up to 6 stages, one per leading stderr byte: the byte
/// is the stage's exit code (0, 124, 137, 141 and the rest all reachable)
/// and picks its name.
fn pipeline(stderr: &[u8]) -> Vec<StageExit> {
    stderr
        .iter()
        .take(6)
        .map(|&b| StageExit { command: stage_name(b.rotate_left(3)).to_string(), exit_code: i32::from(b) })
        .collect()
}

/// `len` bytes of ordinary log lines, as a long output starts.
fn filler(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 32);
    let mut i = 0;
    while out.len() < len {
        out.extend_from_slice(format!("2024-03-01 10:00:00 INFO request {i} handled\n").as_bytes());
        i += 1;
    }
    out.truncate(len);
    out
}

/// Lines as `wc -l` counts them, plus a last line without a newline.
fn lines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count() + usize::from(!bytes.is_empty() && !bytes.ends_with(b"\n"))
}
