//! A tiny `--key value` parser: the bench binary is driven by xtask and by itself
//! (parent → child process), never typed by hand, so positional words plus
//! `--key value` pairs and bare `--flag`s are all it needs (no clap build cost).

use std::collections::BTreeMap;
use std::str::FromStr;

use anyhow::{anyhow, bail, Context, Result};

/// Parsed arguments: positional words, `--key value` pairs and bare flags.
#[derive(Debug, Default)]
pub struct Args {
    pub positional: Vec<String>,
    values: BTreeMap<String, String>,
    flags: Vec<String>,
}

/// Flags that never take a value.
const FLAGS: &[&str] = &["quick", "soak"];

impl Args {
    pub fn parse(argv: &[String]) -> Result<Self> {
        let mut args = Self::default();
        let mut it = argv.iter();
        while let Some(word) = it.next() {
            match word.strip_prefix("--") {
                Some(key) if FLAGS.contains(&key) => args.flags.push(key.to_owned()),
                Some(key) => {
                    let value = it.next().ok_or_else(|| anyhow!("--{key} needs a value"))?;
                    args.values.insert(key.to_owned(), value.clone());
                }
                None => args.positional.push(word.clone()),
            }
        }
        Ok(args)
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    pub fn required(&self, key: &str) -> Result<&str> {
        self.get(key).ok_or_else(|| anyhow!("missing --{key}"))
    }

    /// `--key` parsed as `T`, or `default` when absent.
    pub fn number<T: FromStr>(&self, key: &str, default: T) -> Result<T>
    where
        T::Err: std::error::Error + Send + Sync + 'static,
    {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v.parse().with_context(|| format!("--{key} {v:?}")),
        }
    }

    pub fn flag(&self, name: &str) -> bool {
        self.flags.iter().any(|f| f == name)
    }

    /// The one positional word (e.g. the scenario name).
    pub fn only_positional(&self) -> Result<&str> {
        match self.positional.as_slice() {
            [one] => Ok(one),
            other => bail!("expected one positional argument, got {other:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pairs_flags_and_words() {
        let argv: Vec<String> = ["drain", "--store", "postgres", "--quick", "--run", "2"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let args = Args::parse(&argv).unwrap();
        assert_eq!(args.only_positional().unwrap(), "drain");
        assert_eq!(args.required("store").unwrap(), "postgres");
        assert!(args.flag("quick"));
        assert_eq!(args.number("run", 0u32).unwrap(), 2);
        assert_eq!(args.number("absent", 7u32).unwrap(), 7);
        assert!(Args::parse(&["--store".to_string()]).is_err());
    }
}
