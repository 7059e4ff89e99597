//! The `wire_enum!` macro: one declaration gives a closed enum its wire name, `ALL`, `Display`,
//! `FromStr` and serde, so the name a value prints and the name it parses can never drift apart.

/// Declares a closed, totally ordered enum whose serde form is the given wire name. Declaration
/// order is the total order the planner breaks ties with, so reordering variants is a behaviour
/// change.
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident : $kind:literal {
            $( $(#[$variant_meta:meta])* $variant:ident => $wire:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $( $(#[$variant_meta])* $variant, )+
        }

        impl $name {
            /// Every value, in declaration (total) order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The wire name.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $wire,)+
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, formatter: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                formatter.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::RouteError;

            fn from_str(input: &str) -> Result<Self, Self::Err> {
                match input {
                    $($wire => Ok($name::$variant),)+
                    _ => Err($crate::RouteError::UnknownName {
                        kind: $kind,
                        name: input.to_owned(),
                    }),
                }
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let name = <::std::borrow::Cow<'de, str> as ::serde::Deserialize>::deserialize(
                    deserializer,
                )?;
                name.parse().map_err(|_| {
                    <D::Error as ::serde::de::Error>::unknown_variant(&name, &[$($wire,)+])
                })
            }
        }
    };
}

pub(crate) use wire_enum;
