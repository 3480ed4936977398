//! `clix runs`: the saved runs as a table fitted to the terminal.

use std::io::IsTerminal;
use std::path::Path;

use clix_agent::StopReason;
use clix_agent::replay::money;

use crate::text::one_line;

/// `clix runs`: the table of `runs` (of `here`, or of every folder with
/// `all`; `total` in all), with notes on stderr for what the table leaves
/// out.
pub fn show(
    runs: &[clix_agent::trajectory::RunInfo],
    total: usize,
    all: bool,
    here: &Path,
    currency: &str,
) -> std::io::Result<()> {
    if runs.is_empty() {
        let elsewhere = if total > 0 { format!("; {total} in other folders: clix runs --all") } else { String::new() };
        return crate::outln(format_args!("no runs in {} yet{elsewhere}", here.display()));
    }
    crate::outln(runs_table(runs, all, currency, terminal_width()))?;
    if runs.iter().any(|r| r.resumable) {
        eprintln!("+ can be continued: clix ask --resume ID \"next instruction\" (or clix chat --resume ID)");
    }
    if !all && total > runs.len() {
        eprintln!("{} more in other folders: clix runs --all", total - runs.len());
    }
    Ok(())
}

/// The width to fit a table to: the terminal's, else `COLUMNS`, else none.
fn terminal_width() -> Option<usize> {
    if std::io::stdout().is_terminal()
        && let Some((terminal_size::Width(w), _)) = terminal_size::terminal_size()
    {
        return Some(usize::from(w));
    }
    std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()).filter(|w| *w > 0)
}

/// The runs as a table with a header row: each column as wide as its
/// widest cell, the task last, cut to fit `width` when there is one (and
/// when even the other columns do not fit, the date goes first, as the id
/// starts with it, then the cost, the model, the folder and the tokens).
/// A run's steps, tokens and cost are its whole run's: every task of a
/// resumed run or a chat, and the calls that summarized it.
fn runs_table(
    runs: &[clix_agent::trajectory::RunInfo],
    with_folder: bool,
    currency: &str,
    width: Option<usize>,
) -> String {
    const TASK_ROOM: usize = 12;
    const DROPPED_FIRST: [&str; 5] = ["DATE (UTC)", "COST", "MODEL", "FOLDER", "IN/OUT"];
    let count = |n: u64| match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    };
    let folder = |r: &clix_agent::trajectory::RunInfo| {
        Path::new(&r.workspace).file_name().map(|n| one_line(&n.to_string_lossy(), 20)).unwrap_or_default()
    };
    // "error: <the whole provider message>" would break the table; `replay` has it all.
    let end = |r: &clix_agent::trajectory::RunInfo| {
        let stop = r.stop_reason.as_ref().map_or("unfinished", StopReason::kind);
        format!("{stop}{}", if r.resumable { "+" } else { "" })
    };
    // A column: its header and its cells, a row each.
    type Column<'h> = (&'h str, Vec<String>);
    let mut columns: Vec<Column> = vec![
        ("ID", runs.iter().map(|r| r.id.clone()).collect()),
        ("DATE (UTC)", runs.iter().map(|r| run_date(&r.id)).collect()),
        ("STEPS", runs.iter().map(|r| r.steps.to_string()).collect()),
        ("END", runs.iter().map(end).collect()),
        ("MODEL", runs.iter().map(|r| one_line(&r.model, 24)).collect()),
    ];
    if with_folder {
        columns.push(("FOLDER", runs.iter().map(folder).collect()));
    }
    columns.push((
        "IN/OUT",
        runs.iter().map(|r| format!("{}/{}", count(r.usage.input_tokens), count(r.usage.output_tokens))).collect(),
    ));
    columns.push(("COST", runs.iter().map(|r| r.cost.map_or_else(|| "-".into(), |c| money(c, currency))).collect()));
    let widest = |(header, cells): &Column| {
        cells.iter().map(|c| c.chars().count()).chain([header.chars().count()]).max().unwrap_or(0)
    };
    let fixed = |columns: &[Column]| columns.iter().map(|c| widest(c) + 2).sum::<usize>();
    if let Some(width) = width {
        for dropped in DROPPED_FIRST {
            if fixed(&columns) + TASK_ROOM <= width {
                break;
            }
            columns.retain(|(header, _)| *header != dropped);
        }
    }
    let task_room = width.map(|w| w.saturating_sub(fixed(&columns)).max(TASK_ROOM));
    let cut = |task: &str| match task_room {
        Some(room) if task.chars().count() > room => {
            format!("{}…", task.chars().take(room.saturating_sub(1)).collect::<String>())
        }
        _ => task.to_string(),
    };
    let widths: Vec<usize> = columns.iter().map(widest).collect();
    let line = |cell_of: &dyn Fn(&Column) -> String, task: String| -> String {
        let mut text = String::new();
        for (column, width) in columns.iter().zip(&widths) {
            let cell = cell_of(column);
            let pad = " ".repeat(width - cell.chars().count());
            // Numbers are right-aligned, words left.
            if column.0 == "STEPS" {
                text.push_str(&format!("{pad}{cell}  "))
            } else {
                text.push_str(&format!("{cell}{pad}  "))
            }
        }
        text.push_str(&task);
        text
    };
    let mut table = vec![line(&|c| c.0.to_string(), "TASK".into())];
    for (i, r) in runs.iter().enumerate() {
        table.push(line(&|c| c.1[i].clone(), cut(&one_line(&r.task, 200))));
    }
    table.join("\n")
}

/// `2026-12-04 18:12` (UTC) from a run id, which starts with its time
/// (`20261204-181200-…`); the id itself when it does not.
pub(crate) fn run_date(id: &str) -> String {
    let digits = |range: std::ops::Range<usize>| id.get(range).filter(|d| d.bytes().all(|b| b.is_ascii_digit()));
    match (digits(0..4), digits(4..6), digits(6..8), digits(9..11), digits(11..13)) {
        (Some(y), Some(mo), Some(d), Some(h), Some(mi)) => format!("{y}-{mo}-{d} {h}:{mi}"),
        _ => id.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_s_date_is_read_from_its_id() {
        assert_eq!(run_date("20261204-181200-4242"), "2026-12-04 18:12");
        assert_eq!(run_date("count-run-r0"), "count-run-r0");
    }
}
