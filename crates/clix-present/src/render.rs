//! Putting it together: one raw result in, the text a model reads out.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::binary::{BinaryKind, classify};
use crate::footer::{StageExit, failed_stages, footer};
use crate::hints::next_step_hint;
use crate::overflow::{TextStats, preview};

/// Thresholds of the overflow rule (seed mechanism B); all configurable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PresentOptions {
    /// A stream with more lines than this overflows.
    pub max_lines: usize,
    /// A stream with more bytes than this overflows.
    pub max_bytes: usize,
    /// Lines kept from the start of an overflowing stream.
    pub head_lines: usize,
    /// Lines kept from the end of an overflowing stream.
    pub tail_lines: usize,
    /// Byte cap of one preview, head and tail together.
    pub preview_max_bytes: usize,
}

impl Default for PresentOptions {
    fn default() -> Self {
        PresentOptions {
            max_lines: 200,
            max_bytes: 50 * 1024,
            head_lines: 150,
            tail_lines: 50,
            preview_max_bytes: 16 * 1024,
        }
    }
}

/// An overflow must leave the model something to read: a threshold or a
/// preview of 0 would spill every output, empty ones too, or show none.
impl clix_common::settings::Validate for PresentOptions {
    fn validate(&self) -> Vec<clix_common::settings::BadValue> {
        use clix_common::settings::{BadValue, at_least_one};
        let counts = [
            ("max_lines", self.max_lines, "lines before an output overflows"),
            ("max_bytes", self.max_bytes, "bytes before an output overflows"),
            ("preview_max_bytes", self.preview_max_bytes, "bytes of an overflow's preview"),
        ];
        let mut bad: Vec<BadValue> =
            counts.into_iter().filter_map(|(key, value, what)| at_least_one(key, value as u64, what)).collect();
        if self.head_lines + self.tail_lines == 0 {
            bad.push(BadValue::new("head_lines", 0, "head_lines + tail_lines at least 1 (lines an overflow shows)"));
        }
        bad
    }
}

/// The raw result of one command line, as Layer 1 produced it.
#[derive(Debug, Clone, Copy)]
pub struct CommandOutput<'a> {
    /// Everything the line printed on stdout, as captured.
    pub stdout: &'a [u8],
    /// Everything it printed on stderr, shown after a `[stderr]` label.
    pub stderr: &'a [u8],
    /// The line's exit code, shown in the footer.
    pub exit_code: i32,
    /// How long the line ran, shown in the footer.
    pub duration: Duration,
    /// Set when the engine stopped the line at this time limit.
    pub timed_out: Option<Duration>,
    /// Whether the capture kept every byte (a capped one is said so).
    pub capture: Capture,
    /// The line's pipelines, each its stages first to last, in the order
    /// they ended: the footer names the failed ones ([`failed_stages`]).
    pub pipelines: &'a [Vec<StageExit>],
}

/// Whether the engine kept everything the command printed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Capture {
    /// Every byte the command printed is in `stdout` and `stderr`.
    #[default]
    Complete,
    /// Capture stopped at a limit; the rest was dropped.
    Capped {
        /// How many bytes were kept.
        limit: u64,
        /// How many more bytes came, when known.
        dropped: Option<u64>,
    },
}

/// What produced the final output, when it is known: the last command of
/// the line and the file it read. Used to point at `see` or `cat -b`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origin {
    /// The last command of the line (`cat`), for the usage hint and the binary message.
    pub command: Option<String>,
    /// The file that command read, if one: `see FILE` or `cat -b FILE` is suggested for it.
    pub path: Option<String>,
    /// That command was given `--help` and refused it with a usage error
    /// (`cd --help` in bashkit): the hint is then `help NAME`, which every
    /// in-process command answers, not the same `--help` again.
    pub asked_help: bool,
}

/// Where full outputs go when they overflow.
pub trait SpillSink {
    /// Saves `bytes` and returns the path a later command can read them from.
    fn spill(&mut self, bytes: &[u8]) -> std::io::Result<String>;
}

/// The text a model reads, and what structured callers want to know about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presentation {
    /// What the model reads: the output (or its preview), `[stderr]`, hints
    /// and the `[exit:N | 12ms]` footer, always valid UTF-8.
    pub text: String,
    /// Some output was shown only as a preview.
    pub truncated: bool,
    /// Where the full stdout (or, failing that, stderr) was saved.
    pub spill_path: Option<String>,
    /// The exit code the footer shows: the line's own, except that a line
    /// whose stdout was withheld as binary did not give the reader its
    /// output, so a 0 becomes 1 (the `[error]` line says what to run instead).
    pub exit_code: i32,
    /// The pipeline stages the footer names as failed ([`failed_stages`]):
    /// the line's code does not show them. Empty when none failed.
    pub failed_stages: Vec<StageExit>,
}

/// Applies the Layer-2 rules to the final result of a command line.
///
/// `origin` is only called when a message needs it (binary output, a usage
/// error), so the common path never pays for working it out.
pub fn present(
    out: &CommandOutput<'_>,
    origin: impl FnOnce() -> Origin,
    opts: &PresentOptions,
    spill: &mut dyn SpillSink,
) -> Presentation {
    let origin = std::cell::LazyCell::new(origin);
    let mut text = String::new();
    let mut truncated = false;
    let mut spill_path = None;
    let mut exit_code = out.exit_code;

    match classify(out.stdout) {
        Some(kind) => {
            text.push_str(&binary_message(&kind, out.stdout.len(), &origin));
            if exit_code == clix_common::exit::SUCCESS {
                exit_code = clix_common::exit::FAILURE;
            }
        }
        None => {
            let shown = show_stream(out.stdout, opts, spill);
            truncated |= shown.truncated;
            spill_path = spill_path.or(shown.spill_path);
            text.push_str(&shown.text);
        }
    }

    if !out.stderr.is_empty() {
        let section = match classify(out.stderr) {
            Some(kind) => binary_message(&kind, out.stderr.len(), &Origin::default()),
            None => {
                let shown = show_stream(out.stderr, opts, spill);
                truncated |= shown.truncated;
                spill_path = spill_path.or(shown.spill_path);
                shown.text
            }
        };
        // Our own commands already speak in `[error] …` lines; a second label adds nothing.
        if !section.starts_with("[error]") {
            text.push_str("[stderr] ");
        }
        text.push_str(&section);
        // Our own `[error]` lines already carry their usage. A line that
        // exits 0 may still hide an error mid-pipe (`jq … | awk …`), so the
        // hints read stderr whatever the exit; `origin`, worked out only
        // for failures, serves the usage hint alone.
        let hint = if section.starts_with("[error]") {
            None
        } else {
            let stderr_text = String::from_utf8_lossy(out.stderr);
            let command = if out.exit_code == 0 { None } else { origin.command.as_deref() };
            next_step_hint(command, origin.asked_help, out.exit_code, &stderr_text)
        };
        if let Some(hint) = hint {
            text.push_str(&hint);
            text.push('\n');
        }
    }

    if text.is_empty() {
        text.push_str("(no output)\n");
    }
    match out.capture {
        Capture::Complete => {}
        Capture::Capped { limit, dropped: Some(dropped) } => text.push_str(&format!(
            "--- capture cap of {} reached: {dropped} more bytes were produced and dropped ---\n",
            human_size(limit)
        )),
        Capture::Capped { limit, dropped: None } => text.push_str(&format!(
            "--- capture cap of {} reached: the rest of the output was dropped ---\n",
            human_size(limit)
        )),
    }
    if let Some(limit) = out.timed_out {
        text.push_str(&clix_common::timeout_line(limit));
        text.push('\n');
    }
    let failed = failed_stages(out.pipelines);
    text.push_str(&footer(exit_code, &failed, out.duration));
    Presentation { text, truncated, spill_path, exit_code, failed_stages: failed }
}

struct Shown {
    text: String,
    truncated: bool,
    spill_path: Option<String>,
}

/// One text stream, whole or as a preview with a pointer to its spill file.
fn show_stream(bytes: &[u8], opts: &PresentOptions, spill: &mut dyn SpillSink) -> Shown {
    // The binary guard ran before, so this is valid UTF-8.
    let text = String::from_utf8_lossy(bytes);
    let stats = TextStats::of(&text);
    if stats.lines <= opts.max_lines && stats.bytes <= opts.max_bytes {
        let mut whole = text.into_owned();
        if !whole.is_empty() && !whole.ends_with('\n') {
            whole.push('\n');
        }
        return Shown { text: without_nul(whole), truncated: false, spill_path: None };
    }

    let p = preview(&text, opts.head_lines, opts.tail_lines, opts.preview_max_bytes);
    let mut shown = p.head.clone();
    let mut range = format!("showing lines 1-{}", p.head_end);
    if !p.tail.is_empty() {
        range.push_str(&format!(" and {}-{}", p.tail_start, stats.lines));
    }
    if p.cut_long_lines {
        range.push_str(", long lines cut");
    }
    shown.push_str(&format!(
        "--- output truncated: {} lines, {}; {range} ---\n",
        stats.lines,
        human_size(stats.bytes as u64)
    ));
    let spill_path = match spill.spill(bytes) {
        Ok(path) => {
            shown.push_str(&format!("Full output: {path}\n"));
            shown.push_str(&format!("Explore: grep -n <pattern> {path} | head -50 · tail -100 {path}\n"));
            Some(path)
        }
        Err(e) => {
            shown.push_str(&format!(
                "[error] the full output could not be saved ({e}); re-run with a narrower command, e.g. | grep <pattern> or | tail -100\n"
            ));
            None
        }
    };
    if !p.tail.is_empty() {
        shown.push_str(&p.tail);
    }
    Shown { text: without_nul(shown), truncated: true, spill_path }
}

/// `text` with each NUL shown as U+FFFD. The binary guard looks for NUL in
/// the first 8 KiB only (as `file` and git do), so a text stream may carry
/// one further on; a model's API refuses NUL and a terminal hides it. The
/// marker line's totals still count the bytes as they were (found by the
/// `present` fuzz target).
fn without_nul(text: String) -> String {
    if text.contains('\0') { text.replace('\0', "\u{FFFD}") } else { text }
}

fn binary_message(kind: &BinaryKind, size: usize, origin: &Origin) -> String {
    let who = origin.command.as_deref().unwrap_or("output");
    let size = human_size(size as u64);
    match (kind, origin.path.as_deref()) {
        (BinaryKind::Image(format), Some(path)) => {
            format!("[error] {who}: binary image file ({size}, {format}). Use: see {path}\n")
        }
        (BinaryKind::Image(format), None) => format!(
            "[error] {who}: binary image data ({size}, {format}). Save it to a file (… > out.{}), then: see out.{}\n",
            format.to_lowercase(),
            format.to_lowercase()
        ),
        (BinaryKind::Other { mime }, path) => {
            let what = mime.as_deref().map(|m| format!(", {m}")).unwrap_or_default();
            match path {
                Some(path) => format!(
                    "[error] {who}: binary file ({size}{what}). Use: cat -b {path} (base64), or redirect it to a file\n"
                ),
                None => format!(
                    "[error] {who}: binary output ({size}{what}). Redirect it to a file (… > out.bin), then: cat -b out.bin (base64)\n"
                ),
            }
        }
    }
}

/// `812B`, `182KB`, `245.3KB`, `1.5MB`: one decimal, none when it is `.0`.
pub(crate) fn human_size(bytes: u64) -> String {
    const KB: f64 = 1024.0;
    let b = bytes as f64;
    let (value, unit) = if b < KB {
        return format!("{bytes}B");
    } else if b < KB * KB {
        (b / KB, "KB")
    } else if b < KB * KB * KB {
        (b / KB / KB, "MB")
    } else {
        (b / KB / KB / KB, "GB")
    };
    let s = format!("{value:.1}");
    format!("{}{unit}", s.strip_suffix(".0").unwrap_or(&s))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A spill sink that numbers files like the real one and keeps them in memory.
    #[derive(Default)]
    struct MemorySink {
        files: Vec<Vec<u8>>,
    }

    impl SpillSink for MemorySink {
        fn spill(&mut self, bytes: &[u8]) -> std::io::Result<String> {
            self.files.push(bytes.to_vec());
            Ok(format!(".clix/out/cmd-{}.txt", self.files.len()))
        }
    }

    struct FullDisk;
    impl SpillSink for FullDisk {
        fn spill(&mut self, _: &[u8]) -> std::io::Result<String> {
            Err(std::io::Error::new(std::io::ErrorKind::StorageFull, "No space left on device"))
        }
    }

    fn out<'a>(stdout: &'a [u8], stderr: &'a [u8], code: i32) -> CommandOutput<'a> {
        CommandOutput {
            stdout,
            stderr,
            exit_code: code,
            duration: Duration::from_millis(12),
            timed_out: None,
            capture: Capture::Complete,
            pipelines: &[],
        }
    }

    fn render(o: &CommandOutput<'_>, origin: &Origin) -> (Presentation, MemorySink) {
        let mut sink = MemorySink::default();
        let p = present(o, || origin.clone(), &PresentOptions::default(), &mut sink);
        (p, sink)
    }

    fn lines(n: usize) -> String {
        (1..=n).map(|i| format!("{i}\n")).collect()
    }

    #[test]
    fn small_outputs_table() {
        let cases: [(&[u8], &[u8], i32, &str); 6] = [
            (b"hi\n", b"", 0, "hi\n[exit:0 | 12ms]"),
            (b"no newline", b"", 0, "no newline\n[exit:0 | 12ms]"),
            (b"", b"", 0, "(no output)\n[exit:0 | 12ms]"),
            (b"", b"", 1, "(no output)\n[exit:1 | 12ms]"),
            (b"ok\n", b"warn: x\n", 0, "ok\n[stderr] warn: x\n[exit:0 | 12ms]"),
            (b"", b"cat: f: No such file\n", 1, "[stderr] cat: f: No such file\n[exit:1 | 12ms]"),
        ];
        for (stdout, stderr, code, want) in cases {
            let (p, sink) = render(&out(stdout, stderr, code), &Origin::default());
            assert_eq!(p.text, want);
            assert!(!p.truncated);
            assert!(sink.files.is_empty());
        }
    }

    #[test]
    fn stderr_shown_on_failure_even_with_stdout() {
        let (p, _) = render(&out(b"partial\n", b"boom\n", 3), &Origin::default());
        assert_eq!(p.text, "partial\n[stderr] boom\n[exit:3 | 12ms]");
    }

    #[test]
    fn our_error_lines_are_not_relabelled() {
        let (p, _) = render(&out(b"", b"[error] unknown command: foo\n", 127), &Origin::default());
        assert_eq!(p.text, "[error] unknown command: foo\n[exit:127 | 12ms]");
    }

    #[test]
    fn exactly_200_lines_is_not_truncated_201_is() {
        let (p, sink) = render(&out(lines(200).as_bytes(), b"", 0), &Origin::default());
        assert!(!p.truncated);
        assert!(sink.files.is_empty());
        assert!(p.text.starts_with("1\n") && p.text.contains("\n200\n"));

        let text = lines(201);
        let (p, sink) = render(&out(text.as_bytes(), b"", 0), &Origin::default());
        assert!(p.truncated);
        assert_eq!(sink.files, vec![text.as_bytes().to_vec()]);
        assert!(
            p.text.contains(
                "--- output truncated: 201 lines, 696B; showing lines 1-150 and 152-201 ---\n\
             Full output: .clix/out/cmd-1.txt\n\
             Explore: grep -n <pattern> .clix/out/cmd-1.txt | head -50 · tail -100 .clix/out/cmd-1.txt\n"
            ),
            "{}",
            p.text
        );
        assert!(p.text.ends_with("201\n[exit:0 | 12ms]"));
        assert_eq!(p.spill_path.as_deref(), Some(".clix/out/cmd-1.txt"));
    }

    #[test]
    fn byte_threshold_triggers_on_few_lines() {
        let text = format!("{}\n", "a".repeat(60 * 1024));
        let (p, sink) = render(&out(text.as_bytes(), b"", 0), &Origin::default());
        assert!(p.truncated);
        assert_eq!(sink.files.len(), 1);
        assert!(p.text.contains("1 lines, 60KB; showing lines 1-1, long lines cut"), "{}", p.text);
        assert!(p.text.len() < 17 * 1024);
    }

    #[test]
    fn spill_numbers_grow_per_stream() {
        let big = lines(500);
        let (p, sink) = render(&out(big.as_bytes(), big.as_bytes(), 1), &Origin::default());
        assert_eq!(sink.files.len(), 2);
        assert!(p.text.contains("Full output: .clix/out/cmd-1.txt"));
        assert!(p.text.contains("[stderr] 1\n"));
        assert!(p.text.contains("Full output: .clix/out/cmd-2.txt"));
        assert_eq!(p.spill_path.as_deref(), Some(".clix/out/cmd-1.txt"));
    }

    #[test]
    fn failed_spill_says_so_and_still_previews() {
        let big = lines(500);
        let p = present(&out(big.as_bytes(), b"", 0), Origin::default, &PresentOptions::default(), &mut FullDisk);
        assert!(p.text.contains("could not be saved (No space left on device)"));
        assert!(p.text.contains("\n500\n"));
        assert_eq!(p.spill_path, None);
    }

    #[test]
    fn binary_messages_table() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0";
        let cat = |path: Option<&str>| Origin {
            command: Some("cat".into()),
            path: path.map(str::to_string),
            ..Origin::default()
        };
        let cases: [(&[u8], Origin, &str); 4] = [
            (png, cat(Some("photo.png")), "[error] cat: binary image file (29B, PNG). Use: see photo.png\n"),
            (
                png,
                cat(None),
                "[error] cat: binary image data (29B, PNG). Save it to a file (… > out.png), then: see out.png\n",
            ),
            (
                b"\0\x01\x02",
                cat(Some("a.bin")),
                "[error] cat: binary file (3B). Use: cat -b a.bin (base64), or redirect it to a file\n",
            ),
            (
                b"\xff\xfe",
                Origin::default(),
                "[error] output: binary output (2B). Redirect it to a file (… > out.bin), then: cat -b out.bin (base64)\n",
            ),
        ];
        // The reader did not get the output: a 0 becomes 1; a failure keeps its own code.
        for (bytes, origin, want) in cases {
            let (p, _) = render(&out(bytes, b"", 0), &origin);
            assert_eq!((p.text, p.exit_code), (format!("{want}[exit:1 | 12ms]"), 1));
            let (p, _) = render(&out(bytes, b"", 3), &origin);
            assert_eq!((p.text, p.exit_code), (format!("{want}[exit:3 | 12ms]"), 3));
        }
    }

    /// `jq '.amount' orders.json | awk …` on an array file: jq's error is
    /// on stderr, the line exits 0 (awk's), and the footer names jq.
    #[test]
    fn a_failed_stage_is_named_in_the_footer_and_given_to_callers() {
        let stage = |command: &str, exit_code| StageExit { command: command.into(), exit_code };
        let pipelines = [vec![stage("jq", 5), stage("awk", 0)]];
        let stderr = b"jq: error (at orders.json:0): Cannot index array with \"amount\"\n";
        let (p, _) = render(&CommandOutput { pipelines: &pipelines, ..out(b"\n", stderr, 0) }, &Origin::default());
        assert_eq!(
            p.text,
            "\n[stderr] jq: error (at orders.json:0): Cannot index array with \"amount\"\n\
             try: the input is an array; iterate with .[] (e.g. '.[] | .name') or pick one with .[0]\n\
             [exit:0 | jq exit 5 | 12ms]"
        );
        assert_eq!((p.exit_code, p.failed_stages), (0, vec![stage("jq", 5)]), "the code is not faked");
        let fine = [vec![stage("cat", 0), stage("wc", 0)]];
        let (p, _) = render(&CommandOutput { pipelines: &fine, ..out(b"3\n", b"", 0) }, &Origin::default());
        assert_eq!((p.text.as_str(), p.failed_stages.len()), ("3\n[exit:0 | 12ms]", 0));
    }

    #[test]
    fn usage_errors_point_at_help() {
        let origin = Origin { command: Some("grep".into()), ..Origin::default() };
        let (p, _) = render(&out(b"", b"grep: usage: grep PATTERN\n", 2), &origin);
        assert_eq!(p.text, "[stderr] grep: usage: grep PATTERN\ntry: grep --help\n[exit:2 | 12ms]");
    }

    #[test]
    fn timeout_and_dropped_bytes_lines() {
        let mut o = out(b"tick\n", b"", 124);
        o.timed_out = Some(Duration::from_secs(30));
        o.capture = Capture::Capped { limit: 64 * 1024 * 1024, dropped: Some(10) };
        o.duration = Duration::from_millis(30_004);
        let (p, _) = render(&o, &Origin::default());
        assert_eq!(
            p.text,
            "tick\n--- capture cap of 64MB reached: 10 more bytes were produced and dropped ---\n\
             timed out after 30s; raise with --timeout or run it in the background\n[exit:124 | 30.0s]"
        );
    }

    #[test]
    fn human_size_table() {
        let cases =
            [(0, "0B"), (1023, "1023B"), (1024, "1KB"), (186_368, "182KB"), (251_187, "245.3KB"), (1_572_864, "1.5MB")];
        for (bytes, want) in cases {
            assert_eq!(human_size(bytes), want);
        }
    }
}
