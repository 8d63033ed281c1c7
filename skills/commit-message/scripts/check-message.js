// Checks a commit message against the rules in ../SKILL.md.
// Usage: node scripts/check-message.js "<message>"   (exit 0: ok, 1: a rule is broken, 2: usage)
const message = process.argv.slice(2).join(' ');
if (!message.trim()) {
  console.error('usage: check-message.js "<commit message>"');
  process.exit(2);
}
const [subject, blank, ...body] = message.split('\n');
const problems = [];
const TYPES = ['feat', 'fix', 'docs', 'refactor', 'perf', 'test', 'build', 'ci', 'chore'];
const match = /^(\w+)(\([\w./-]+\))?(!)?: (.+)$/.exec(subject);
if (!match) problems.push('the subject must look like "type(scope): summary"');
else {
  if (!TYPES.includes(match[1])) problems.push(`unknown type "${match[1]}" (use one of: ${TYPES.join(', ')})`);
  if (/\.$/.test(match[4])) problems.push('the summary must not end with a period');
  if (/^[a-z]+(ed|s)\b/.test(match[4])) problems.push('write the summary in the imperative mood ("add", not "added"/"adds")');
}
if (subject.length > 72) problems.push(`the subject is ${subject.length} characters; keep it to 72`);
if (blank !== undefined && blank !== '') problems.push('leave a blank line between the subject and the body');
body.forEach((line, i) => {
  if (line.length > 72) problems.push(`body line ${i + 3} is ${line.length} characters; wrap at 72`);
});
if (problems.length === 0) {
  console.log('ok');
} else {
  for (const problem of problems) console.log(`- ${problem}`);
  process.exit(1);
}
