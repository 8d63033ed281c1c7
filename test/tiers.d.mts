/** Types of test/tiers.mjs (plain JS, so `.ci/run` can run it with node alone). */
export type Tier = 'unit' | 'front' | 'level' | 'uid' | 'node';
export declare const TIERS: Record<Tier, readonly string[]>;
export declare function tierFiles(tier: Tier): string[];
