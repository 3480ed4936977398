//! Level 0: what the model is told of every skill up front.

use std::fmt::Write as _;

use crate::Skills;

impl Skills {
    /// Each skill's name and description (on one line), in name order,
    /// while they fit in `budget` bytes; then how many more there are and
    /// that `skill` lists them all. Empty when there are no skills.
    pub fn level0(&self, budget: usize) -> String {
        if self.all().is_empty() {
            return String::new();
        }
        let width = self.all().iter().map(|s| s.name.len()).max().unwrap_or(0);
        let mut text = String::from("Skills (instructions for a task: skill <name> shows them):\n");
        let mut used = 0;
        let mut shown = 0;
        for skill in self.all() {
            // One line, and nothing a terminal or the prompt would act on (a workspace wrote it).
            let description = skill.description.split_whitespace().collect::<Vec<_>>().join(" ");
            let description = clix_common::names::escape_controls(&description);
            let line = format!("  {:width$}  {description}\n", skill.name);
            if used + line.len() > budget {
                break;
            }
            used += line.len();
            shown += 1;
            text.push_str(&line);
        }
        let more = self.all().len() - shown;
        if more > 0 {
            let _ = writeln!(text, "  … {more} more: `skill` lists them all");
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use crate::{Skills, SkillsConfig};
    use std::fs;

    fn skills(count: usize) -> (tempfile::TempDir, Skills) {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..count {
            let name = format!("skill-{i:02}");
            fs::create_dir_all(dir.path().join(&name)).unwrap();
            let md = format!("---\nname: {name}\ndescription: Does\n  thing {i}.\n---\n");
            fs::write(dir.path().join(&name).join("SKILL.md"), md).unwrap();
        }
        let config = SkillsConfig { person_dir: Some(dir.path().to_path_buf()), level0_bytes: 0 };
        let found = Skills::find(&config, None);
        (dir, found)
    }

    #[test]
    fn the_budget_cuts_the_list_and_says_how_many_more() {
        let (_dir, found) = skills(5);
        let whole = found.level0(usize::MAX);
        assert_eq!(whole.lines().count(), 6, "{whole}");
        assert!(whole.contains("  skill-03  Does thing 3.\n") && !whole.contains("more"), "{whole}");
        let line = "  skill-00  Does thing 0.\n".len();
        let cut = found.level0(2 * line + 1);
        assert!(cut.contains("skill-01") && !cut.contains("skill-02"), "{cut}");
        assert!(cut.ends_with("  … 3 more: `skill` lists them all\n"), "{cut}");
        assert!(found.level0(0).contains("… 5 more"));
        assert_eq!(skills(0).1.level0(2048), "");
    }
}
