/**
 * Links the rule refuses and accepts (the contract, section 6): one list for the import's check
 * (src/domain/vocabulary.ts) and the database's (sql/009_link_schemes.sql), so that the two
 * cannot drift apart. A browser strips C0 controls and spaces from both ends of a URL and
 * removes tabs and line breaks anywhere in it, so `\u0000java\tscript:` is `javascript:` to it.
 * Refused too: other schemes, and what only looks like no scheme to a browser (a no-break space
 * first, which another reader may trim): an allow-list of schemes, not a list of bad ones.
 */
export const REFUSED_LINKS: readonly string[] = [
  'javascript:alert(1)',
  'JavaScript:alert(1)',
  'JAVASCRIPT:alert(1)',
  ' javascript:alert(1)',
  'javascript:alert(1) ',
  '  javascript:alert(1)  ',
  '\tjavascript:alert(1)',
  '\njavascript:alert(1)',
  '\r\njavascript:alert(1)',
  '\u0000javascript:alert(1)',
  '\u0001javascript:alert(1)',
  '\u001fjavascript:alert(1)',
  '\u0000\u0008 \u000b\u000cjavascript:alert(1)',
  'java\tscript:alert(1)',
  'java\nscript:alert(1)',
  'java\rscript:alert(1)',
  'j\ta\nv\ra script:alert(1)',
  'javascript\t:alert(1)',
  'javascript://%0aalert(1)',
  '\u00a0javascript:alert(1)',
  'data:text/html,<script>alert(1)</script>',
  'DATA:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==',
  'vbscript:msgbox(1)',
  ' VBScript:msgbox(1)',
  'file:///etc/passwd',
  'ftp://example.com/file',
  'blob:https://example.com/0',
  'crm:leads',
]

/** Paths, relative references and https:, http: and mailto: URLs, in any case, spaces around. */
export const ACCEPTED_LINKS: readonly string[] = [
  '/crm/leads',
  'crm/leads',
  './leads',
  '../reports',
  '?tab=open',
  '#top',
  '',
  '//cdn.example.com/logo.png',
  '/search?q=a:b',
  '/crm/leads#javascript:alert(1)',
  'leads?next=javascript:alert(1)',
  'https://example.com/crm',
  'HTTPS://EXAMPLE.COM/CRM',
  'http://example.com:8080/a:b',
  'Http://example.com',
  'mailto:help@example.com',
  ' https://example.com ',
  '\thttps://example.com\n',
  ' /crm/leads ',
]
