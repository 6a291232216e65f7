// ESLint (typescript-eslint's recommended rules), run by `npm run lint` and by `npm test`.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'build/**', 'node_modules/**', 'models/**', 'data/**', 'bench/profiles/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: globals.node },
    rules: {
      // `_`-named bindings are deliberate: an argument an interface requires, or a property
      // left out of a copy with a rest pattern.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  {
    // Configuration is read in one place (src/config.ts; the engine, below it, reads its own
    // few knobs in src/engine/environment.ts): a setting read anywhere else is one the
    // operator cannot find, the examples in systemd/ may miss, and tests cannot set through
    // loadConfig. test/layers/env-reads.test.ts plants a read to show this rule refuses it.
    files: ['src/**/*.ts'],
    ignores: ['src/config.ts', 'src/engine/environment.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        {
          object: 'process',
          property: 'env',
          message: 'Read configuration in src/config.ts (the engine: src/engine/environment.ts) and pass it in.',
        },
      ],
    },
  },
  {
    // Tests and benches read JSON bodies of real HTTP answers whose shape they then assert.
    files: ['test/**', 'bench/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
