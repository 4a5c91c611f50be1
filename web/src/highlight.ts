// Syntax highlighting with highlight.js's core and a handful of languages: the
// full build alone would blow the single-file size budget.
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import css from 'highlight.js/lib/languages/css';
import diff from 'highlight.js/lib/languages/diff';
import go from 'highlight.js/lib/languages/go';
import java from 'highlight.js/lib/languages/java';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import markdown from 'highlight.js/lib/languages/markdown';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';

const languages = { bash, css, diff, go, java, javascript, json, markdown, python, rust, sql, typescript, xml, yaml };
for (const [name, language] of Object.entries(languages)) hljs.registerLanguage(name, language);
hljs.registerAliases(['sh', 'shell', 'zsh', 'console'], { languageName: 'bash' });
hljs.registerAliases(['tsx', 'mts', 'cts'], { languageName: 'typescript' });
hljs.registerAliases(['jsx', 'mjs', 'cjs'], { languageName: 'javascript' });
hljs.registerAliases(['html', 'svg', 'vue'], { languageName: 'xml' });
hljs.registerAliases(['yml'], { languageName: 'yaml' });

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** Escaped HTML for code in a language; unknown languages and huge inputs stay plain (escaped) text. */
export function highlight(code: string, language: string, maxLength = 200_000): string {
  if (language === '' || code.length > maxLength || hljs.getLanguage(language) === undefined) return escapeHtml(code);
  return hljs.highlight(code, { language, ignoreIllegals: true }).value;
}

const lineCache = new Map<string, string>();

/** One diff line, highlighted on its own (cached: the virtual list re-renders rows as they scroll by). */
export function highlightLine(text: string, language: string): string {
  const key = `${language}\u0000${text}`;
  let html = lineCache.get(key);
  if (html === undefined) {
    html = highlight(text, language, 2_000);
    if (lineCache.size > 20_000) lineCache.clear();
    lineCache.set(key, html);
  }
  return html;
}
