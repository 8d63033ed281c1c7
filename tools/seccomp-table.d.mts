/** Types of tools/seccomp-table.mjs for the test that makes the table again. */
export declare const ARCHES: readonly ['x86_64', 'aarch64'];
export declare const LATER: readonly { name: string; nr: { x86_64?: number; aarch64?: number } }[];
export declare function makeTables(): Promise<Record<'x86_64' | 'aarch64', Record<string, number>>>;
