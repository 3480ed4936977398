//! `cat`, with `-b` meaning base64 (seed 000/002) instead of GNU's
//! "number non-blank lines". bashkit offers no way to call its own `cat`
//! from a replacement, so the GNU options agents use are implemented here:
//! `-n -s -E -T -v -A -e -t`, `-` for stdin, several files. Only the short
//! `-b` changed meaning: GNU's long options all keep theirs, including
//! `--number-nonblank`, and may be shortened to any unambiguous prefix.

use base64::Engine as _;
use clix_command::{AgentCommand, CommandIo, CommandSpec, CommandStatus, async_trait, fail};

use clix_command::{fs_reason, resolve};

/// Width of a base64 line, as GNU `base64` wraps.
const BASE64_LINE: usize = 76;

pub(crate) struct Cat {
    spec: CommandSpec,
}

#[derive(Default)]
struct Options {
    base64: bool,
    number: bool,
    number_nonblank: bool,
    squeeze: bool,
    show_ends: bool,
    show_tabs: bool,
    show_nonprinting: bool,
}

impl Cat {
    pub(crate) fn new() -> Self {
        Cat {
            spec: CommandSpec {
                name: "cat".into(),
                summary: "print files or stdin; cat -b FILE prints a binary file as base64".into(),
                usage: "cat [-b] [-nsETvAet] [file...]".into(),
                subcommands: vec![],
                details: "-b, --base64          print the content as base64 (for binary files)\n\
                          -n, --number          number all output lines\n\
                          --number-nonblank     number non-empty output lines (GNU's -b), overrides -n\n\
                          -s, --squeeze-blank   suppress repeated empty lines\n\
                          -E, --show-ends       show $ at the end of each line\n\
                          -T, --show-tabs       show tabs as ^I\n\
                          -v, --show-nonprinting  show control characters as ^X and M-X\n\
                          -A, --show-all        same as -vET; -e is -vE; -t is -vT\n\
                          With no file, or when a file is -, read stdin.\n\
                          Note: unlike GNU cat, -b is base64, not numbering of non-blank lines."
                    .into(),
                needs_args: false,
            },
        }
    }
}

/// The long options, GNU's plus `--base64`.
const LONG_OPTIONS: &[&str] = &[
    "--base64",
    "--number",
    "--number-nonblank",
    "--squeeze-blank",
    "--show-ends",
    "--show-tabs",
    "--show-nonprinting",
    "--show-all",
];

/// The long option `arg` names: itself, or the only one it is a prefix of
/// (as getopt_long allows), worded like GNU cat when it is neither.
fn long_option(arg: &str) -> Result<&'static str, String> {
    if let Some(exact) = LONG_OPTIONS.iter().find(|o| **o == arg) {
        return Ok(exact);
    }
    let matches: Vec<&str> = LONG_OPTIONS.iter().copied().filter(|o| o.starts_with(arg)).collect();
    match matches[..] {
        [only] => Ok(only),
        [] => Err(format!("unrecognized option '{arg}'")),
        _ => {
            let possible: Vec<String> = matches.iter().map(|o| format!("'{o}'")).collect();
            Err(format!("option '{arg}' is ambiguous; possibilities: {}", possible.join(" ")))
        }
    }
}

fn parse(args: &[String]) -> Result<(Options, Vec<String>), String> {
    let mut o = Options::default();
    let mut files = Vec::new();
    let mut only_files = false;
    for arg in args {
        if only_files || arg == "-" || !arg.starts_with('-') {
            files.push(arg.clone());
            continue;
        }
        match arg.as_str() {
            "--" => only_files = true,
            long if long.starts_with("--") => match long_option(long)? {
                "--base64" => o.base64 = true,
                "--number" => o.number = true,
                "--number-nonblank" => o.number_nonblank = true,
                "--squeeze-blank" => o.squeeze = true,
                "--show-ends" => o.show_ends = true,
                "--show-tabs" => o.show_tabs = true,
                "--show-nonprinting" => o.show_nonprinting = true,
                _ => (o.show_nonprinting, o.show_ends, o.show_tabs) = (true, true, true),
            },
            short => {
                for flag in short[1..].chars() {
                    match flag {
                        'b' => o.base64 = true,
                        'n' => o.number = true,
                        's' => o.squeeze = true,
                        'E' => o.show_ends = true,
                        'T' => o.show_tabs = true,
                        'v' => o.show_nonprinting = true,
                        'u' => {}
                        'A' => (o.show_nonprinting, o.show_ends, o.show_tabs) = (true, true, true),
                        'e' => (o.show_nonprinting, o.show_ends) = (true, true),
                        't' => (o.show_nonprinting, o.show_tabs) = (true, true),
                        other => return Err(format!("invalid option -- '{other}'")),
                    }
                }
            }
        }
    }
    if files.is_empty() {
        files.push("-".into());
    }
    Ok((o, files))
}

/// Line-oriented rendering shared by all input files, like GNU cat, whose
/// line numbers and blank-line squeezing run across file boundaries.
struct Renderer<'o> {
    o: &'o Options,
    line_no: usize,
    at_line_start: bool,
    blank_run: usize,
}

impl Renderer<'_> {
    fn plain(&self) -> bool {
        !(self.o.number
            || self.o.number_nonblank
            || self.o.squeeze
            || self.o.show_ends
            || self.o.show_tabs
            || self.o.show_nonprinting)
    }

    fn push(&mut self, input: &[u8], out: &mut Vec<u8>) {
        if self.plain() {
            out.extend_from_slice(input);
            return;
        }
        for line in input.split_inclusive(|&b| b == b'\n') {
            let is_blank = line == b"\n" && self.at_line_start;
            if is_blank {
                self.blank_run += 1;
                if self.o.squeeze && self.blank_run > 1 {
                    continue;
                }
            } else if self.at_line_start {
                self.blank_run = 0;
            }
            // As in GNU cat, numbering non-blank lines wins over numbering all.
            let numbered = if self.o.number_nonblank { !is_blank } else { self.o.number };
            if self.at_line_start && numbered {
                self.line_no += 1;
                out.extend_from_slice(format!("{:6}\t", self.line_no).as_bytes());
            }
            for &byte in line {
                self.byte(byte, out);
            }
            self.at_line_start = line.ends_with(b"\n");
        }
    }

    fn byte(&self, b: u8, out: &mut Vec<u8>) {
        match b {
            b'\n' => {
                if self.o.show_ends {
                    out.push(b'$');
                }
                out.push(b'\n');
            }
            b'\t' if self.o.show_tabs => out.extend_from_slice(b"^I"),
            b'\t' => out.push(b'\t'),
            _ if !self.o.show_nonprinting => out.push(b),
            0..=31 => out.extend_from_slice(&[b'^', b + 64]),
            127 => out.extend_from_slice(b"^?"),
            128.. => {
                out.extend_from_slice(b"M-");
                match b - 128 {
                    low @ 0..=31 => out.extend_from_slice(&[b'^', low + 64]),
                    127 => out.extend_from_slice(b"^?"),
                    other => out.push(other),
                }
            }
            _ => out.push(b),
        }
    }
}

#[async_trait]
impl AgentCommand for Cat {
    fn spec(&self) -> &CommandSpec {
        &self.spec
    }

    async fn run(&self, io: CommandIo<'_>) -> bashkit::Result<CommandStatus> {
        let (options, files) = match parse(io.args) {
            Ok(parsed) => parsed,
            Err(message) => {
                return fail(&io, &format!("cat: {message}\nusage: {}\n", self.spec.usage), 1).await;
            }
        };
        let mut renderer = Renderer { o: &options, line_no: 0, at_line_start: true, blank_run: 0 };
        // base64 needs every byte before it can encode them in 76-column lines.
        let mut for_base64 = Vec::new();
        let mut failed = false;
        for file in &files {
            if file == "-" {
                // Stream stdin through, so `producer | cat | consumer` flows.
                while let Some(chunk) = io.stdin.read_chunk().await? {
                    emit(&io, &mut renderer, &mut for_base64, &chunk).await?;
                }
                continue;
            }
            match io.fs.read_file(&resolve(io.cwd, file)).await {
                Ok(bytes) => emit(&io, &mut renderer, &mut for_base64, &bytes).await?,
                Err(e) => {
                    io.stderr.write_all(format!("cat: {file}: {}\n", fs_reason(&e)).as_bytes()).await?;
                    failed = true;
                }
            }
        }
        if options.base64 {
            io.stdout.write_all(&base64_lines(&for_base64)).await?;
        }
        Ok(CommandStatus::with_code(i32::from(failed)))
    }
}

/// Renders one piece of input to stdout, or keeps it for base64.
async fn emit(
    io: &CommandIo<'_>,
    renderer: &mut Renderer<'_>,
    for_base64: &mut Vec<u8>,
    bytes: &[u8],
) -> bashkit::Result<()> {
    if renderer.o.base64 {
        for_base64.extend_from_slice(bytes);
        return Ok(());
    }
    let mut out = Vec::with_capacity(bytes.len());
    renderer.push(bytes, &mut out);
    io.stdout.write_all(&out).await
}

fn base64_lines(bytes: &[u8]) -> Vec<u8> {
    let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
    let mut out = Vec::with_capacity(encoded.len() + encoded.len() / BASE64_LINE + 1);
    for chunk in encoded.as_bytes().chunks(BASE64_LINE) {
        out.extend_from_slice(chunk);
        out.push(b'\n');
    }
    out
}
