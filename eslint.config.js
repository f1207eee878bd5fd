// Lint rules for the whole tree: typescript-eslint's recommended set, plus the few
// house rules that keep the layout honest (no console in library code: use the logger).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'data/', 'coverage/', 'clients/typescript/dist/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'error',
    },
  },
  {
    // Entry points and CLIs talk to a person on a terminal.
    files: ['src/main.ts', 'src/admin/**', 'src/ops/**', 'src/simulator/main.ts', 'temporal/*-main.ts', 'bench/**', 'db/migrate.ts', 'db/*-main.ts', 'clients/typescript/examples/**', 'clients/typescript/scripts/**', 'test/stress/**'],
    rules: { 'no-console': 'off' },
  },
);
