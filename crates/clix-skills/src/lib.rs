//! Agent Skills (the open `SKILL.md` format) as clix sees them.
//!
//! A skill is a folder holding `SKILL.md`: YAML front matter with `name` and
//! `description`, then instructions, and any other files (scripts, references)
//! beside it. This crate owns:
//!
//! - finding skills: the person's config folder `skills/` (a skill folder there
//!   may be a symlink), then the workspace's `.clix/skills/` and
//!   `.agents/skills/`, the workspace's read only through its `clix_workspace`
//!   handle, so a skill folder linked out of the workspace is reported, never
//!   followed;
//! - parsing and checking `SKILL.md` ([`parse_skill_md`]) by the open format's
//!   rules (`name`: lowercase letters, digits and single hyphens, at most 64
//!   characters, the folder's name; `description`: not empty, at most 1024
//!   characters; other fields ignored): a bad skill is a [`Problem`] (which
//!   file, what is wrong, what to do) and is skipped, never fatal;
//! - precedence: on a name clash the first found wins (the person's over a
//!   workspace's, `.clix` over `.agents`), and the clash is reported;
//! - the level-0 text ([`Skills::level0`]): names and one-line descriptions in
//!   name order within a byte budget, then a line counting the rest and
//!   pointing to `skill`, for the `run` tool's description;
//! - the `[skills]` settings section and each skill's folder as a handle
//!   ([`Skill::folder`]), through which its files are listed and read;
//! - the `skill` command (`skill NAME` prints its `SKILL.md`, `skill NAME
//!   files|cat|run` reach its other files), joined to an engine as a
//!   `clix_command::Capability` (`SkillsConfig`), its problems and clashes
//!   given as the engine's notices.
//!
//! It must not run a skill's script except as a stage in the OS sandbox,
//! through the `StageRunner` the engine lends (a person's skill folder mounted
//! read-only, a workspace's reached through the workspace mount), never on the
//! host: a workspace's skill is a cloned repository's code. It must not print,
//! or read a workspace path through `std::fs`.

mod command;
mod find;
mod level0;
mod parse;
mod settings;

pub use find::{Origin, PERSON_FOLDER, Problem, Skill, Skills, SkillsConfig, WORKSPACE_FOLDERS};
pub use parse::{Fault, FrontMatter, MAX_DESCRIPTION, MAX_NAME, parse_skill_md};
pub use settings::SkillsSettings;

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";
