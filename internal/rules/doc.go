// Package rules is the classification rules engine: Compile validates and
// compiles a rule's conditions tree (a JSON object, documented for users in
// docs/detections.md), Condition.Match evaluates it against the Facts of one
// incident, a RuleSet picks the rule that decides an incident's severity,
// and a Classifier loads an org's rules and classifies its incidents through
// the store. Suppressions speak the same language over one signal:
// CompileSignal accepts the fields of a signal (signal.*, artifact.source,
// node.*, event.*) where Compile accepts an incident's.
//
// Matching semantics, in one place:
//
//   - A field over a collection (observation.*, artifact.source, node.*,
//     event.*) yields one value per element, and an event field holding an
//     array yields one value per array item. A leaf matches when ANY value
//     satisfies it. "No element matches" is written with "not".
//   - eq, in, contains, prefix and suffix compare strings case-insensitively
//     (SOC data mixes "Admin"/"admin", "EVIL.example"/"evil.example"). regex
//     is case-sensitive RE2; write (?i) for the other.
//   - A number in a rule compares numerically with numbers and with numeric
//     strings of the data ("22" eq 22). A string in a rule compares as a
//     string with strings, and numerically with numbers when it is numeric.
//     A boolean compares with booleans and with the strings "true"/"false".
//   - contains/prefix/suffix/regex see numbers and booleans in their text
//     form (22 → "22", true → "true").
//   - gt/gte/lt/lte need a numeric value; on incident.severity and
//     observation.severity they compare by rank (low=1 < medium=2 < high=3 <
//     critical=4) whether the rule names a severity or gives the rank.
//   - cidr matches a value that is an IP address inside any of the prefixes.
//   - ne over a collection matches when some element is present and differs
//     from the value; it is "any element differs", not "none equals".
//   - A missing field (no element, no such event key, a null value, an empty
//     array) makes every operator false, ne included, except exists:false.
//     exists:true means some element has the field; exists:false that none
//     has it, so exists is the one operator judged over the whole collection.
//   - An empty object {} (or absent conditions) matches everything.
package rules
