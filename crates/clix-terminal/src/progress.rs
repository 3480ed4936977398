//! Progress on stderr: `clix eval`'s attempts (a bar on a terminal, a
//! line per attempt elsewhere), and memories being embedded again.

use clix_eval::AttemptRecord;

/// The bar on a terminal: attempts done, passing so far, tokens so far.
pub struct Progress {
    bar: Option<indicatif::ProgressBar>,
    passed: u64,
    done: u64,
    tokens: u64,
}

impl Progress {
    /// A bar for `total` attempts, drawn when `show`, else a line per attempt.
    pub fn new(total: u64, show: bool) -> Self {
        let bar = show.then(|| {
            let bar = indicatif::ProgressBar::new(total);
            let style = indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} attempts · {msg} · {elapsed}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
            bar.set_style(style);
            bar.enable_steady_tick(std::time::Duration::from_millis(500));
            bar
        });
        Progress { bar, passed: 0, done: 0, tokens: 0 }
    }

    /// One attempt done.
    pub fn done(&mut self, r: &AttemptRecord) {
        self.done += 1;
        self.passed += u64::from(r.passed);
        self.tokens += r.input_tokens.unwrap_or(0) + r.output_tokens.unwrap_or(0);
        match &self.bar {
            Some(bar) => {
                bar.set_message(format!("{}/{} passing · {} tokens", self.passed, self.done, self.tokens));
                bar.inc(1);
            }
            // Without a terminal (CI logs), one line per attempt.
            None => eprintln!(
                "{} {} [{}] r{}: {} in {:.1}s",
                if r.passed { "PASS" } else { "FAIL" },
                r.task,
                r.design,
                r.repeat,
                r.stop_reason,
                r.wall_ms as f64 / 1000.0
            ),
        }
    }

    /// Takes the bar off the screen.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// A bar on stderr for memories being embedded again, shown from the first
/// report, gone at the last.
pub fn embedding_bar() -> clix_memory::Progress {
    let bar: std::sync::Mutex<Option<indicatif::ProgressBar>> = std::sync::Mutex::new(None);
    std::sync::Arc::new(move |done, total| {
        let mut bar = bar.lock().unwrap_or_else(|p| p.into_inner());
        let b = bar.get_or_insert_with(|| {
            let b = indicatif::ProgressBar::new(total as u64);
            if let Ok(style) = indicatif::ProgressStyle::with_template("embedding memories {bar:30} {pos}/{len} {eta}")
            {
                b.set_style(style);
            }
            b
        });
        b.set_length(total as u64);
        b.set_position(done as u64);
        if done >= total {
            b.finish_and_clear();
            *bar = None;
        }
    })
}
