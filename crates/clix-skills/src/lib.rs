//! Agent Skills (the open `SKILL.md` format) as clix sees them.
//!
//! A skill is a folder holding `SKILL.md`: YAML front matter with `name`
//! and `description`, then instructions, and any other files (scripts,
//! references) beside it. This crate owns:
//!
//! - finding skills: the person's config folder `skills/`, then the
//!   workspace's `.clix/skills/` and `.agents/skills/`, the workspace's read
//!   only through its `clix_workspace` handle (a symlink leading out of it
//!   is not followed);
//! - parsing and checking `SKILL.md` ([`parse_skill_md`]): a bad skill is a
//!   [`Problem`] (which file, what is wrong, what to do) and is skipped,
//!   never fatal;
//! - precedence: on a name clash the person's skill wins over a
//!   workspace's, and the clash is reported;
//! - the level-0 text ([`Skills::level0`]): names and descriptions within a
//!   byte budget, for the `run` tool's description;
//! - the `[skills]` settings section and each skill's folder as a handle
//!   ([`Skill::folder`]), through which its files are listed and read.
//!
//! It must not run anything (the `skill` command in `clix-engine` runs a
//! skill's scripts through `clix-sandbox`), print, or read a workspace
//! path through `std::fs`.

mod find;
mod level0;
mod parse;
mod settings;

pub use find::{Origin, PERSON_FOLDER, Problem, Skill, Skills, SkillsConfig, WORKSPACE_FOLDERS};
pub use parse::{Fault, FrontMatter, MAX_DESCRIPTION, MAX_NAME, parse_skill_md};
pub use settings::SkillsSettings;

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";
