// ESLint: the recommended rules of ESLint and typescript-eslint on every TypeScript and script file.
// `npm run lint` runs it; CI runs it before the tests.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/dist/**', 'build/**', '**/node_modules/**', 'bench/peers/**', 'bench/results/**', 'examples/**/dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: globals.node },
    rules: {
      // `_name` marks a value left unused on purpose (a destructured field dropped, a required parameter).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', destructuredArrayIgnorePattern: '^_' },
      ],
    },
  },
  // The browser example runs in a page.
  { files: ['examples/browser-client/**/*.js', 'packages/console/src/**/*.ts'], languageOptions: { globals: globals.browser } },
  // Tests read answers' JSON bodies as `any` and let the assertions say what they must be.
  { files: ['test/**/*.ts'], rules: { '@typescript-eslint/no-explicit-any': 'off' } },
);
