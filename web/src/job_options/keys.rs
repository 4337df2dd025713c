//! How an option is spelled where it is written, and the keys serde reads:
//! so that a message names `runIn` in a JSON body, `run_in` in a TOML file
//! and `--run-in` on a command line, and a list of keys is never written
//! twice (it is asked of the serde derive).

/// How the options were written: which name a message gives an option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spelling {
    /// Command-line flags: `--run-in`.
    Flag,
    /// A JSON file's keys: `runIn`.
    Json,
    /// A TOML file's keys: `run_in`.
    Toml,
}

impl Spelling {
    /// The name of the option whose [`super::JobOptions`] field is `field`.
    pub fn name(self, field: &str) -> String {
        match self {
            Self::Flag => format!("--{}", field.replace('_', "-")),
            Self::Toml => field.to_owned(),
            Self::Json => {
                let mut parts = field.split('_');
                let first = parts.next().unwrap_or_default().to_owned();
                parts.fold(first, |mut out, part| {
                    let mut chars = part.chars();
                    if let Some(c) = chars.next() {
                        out.push(c.to_ascii_uppercase());
                        out.extend(chars);
                    }
                    out
                })
            }
        }
    }
}

/// The field names serde reads for the struct `T`, asked of its derive (so a
/// list of keys is never written twice): a deserializer that records the
/// fields `deserialize_struct` is called with, then stops.
pub fn serde_fields<T: serde::de::DeserializeOwned>() -> &'static [&'static str] {
    use serde::de::{self, Visitor};
    struct Probe<'a>(&'a mut &'static [&'static str]);
    impl<'de> de::Deserializer<'de> for Probe<'_> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("fields recorded"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Probe(&mut fields));
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_spelling_names_an_option_as_it_is_written() {
        assert_eq!(Spelling::Flag.name("run_in"), "--run-in");
        assert_eq!(Spelling::Json.name("max_concurrency"), "maxConcurrency");
        assert_eq!(Spelling::Json.name("queue"), "queue");
        assert_eq!(Spelling::Toml.name("rate_key"), "rate_key");
    }

    #[test]
    fn the_keys_are_the_derives() {
        let keys = serde_fields::<super::super::JobOptions>();
        assert!(keys.contains(&"runIn") && keys.contains(&"keepCompleted"));
    }
}
